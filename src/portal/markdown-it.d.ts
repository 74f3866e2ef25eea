// The part of markdown-it's API that src/portal/markdown.ts uses. markdown-it ships no types
// (they live in @types/markdown-it); this keeps the one dependency and the compiler honest.
declare module 'markdown-it' {
  interface Options {
    html?: boolean
    linkify?: boolean
    typographer?: boolean
    breaks?: boolean
  }
  export default class MarkdownIt {
    constructor(options?: Options)
    render(source: string): string
    /** Called with every link and image destination; false leaves the Markdown as text. */
    validateLink: (url: string) => boolean
  }
}
