// The part of markdown-it's API that src/portal/markdown.ts uses. markdown-it ships no types
// (they live in @types/markdown-it); this keeps the one dependency and the compiler honest.
declare module 'markdown-it' {
  interface Options {
    html?: boolean
    linkify?: boolean
    typographer?: boolean
    breaks?: boolean
  }
  /** A token of the parse: a block, or (in an inline block's children) a piece of its text. */
  export interface Token {
    type: string
    content: string
    children: Token[] | null
    attrGet(name: string): string | null
    attrSet(name: string, value: string): void
  }
  interface StateCore {
    tokens: Token[]
    Token: new (type: string, tag: string, nesting: number) => Token
  }
  export default class MarkdownIt {
    constructor(options?: Options)
    render(source: string): string
    /** Called with every link and image destination; false leaves the Markdown as text. */
    validateLink: (url: string) => boolean
    /** A link's destination as a reader sees it (percent-decoded where it decodes). */
    normalizeLinkText(url: string): string
    core: { ruler: { push(name: string, rule: (state: StateCore) => void): void } }
  }
}
