// The tester portal's pages: the join page in each of its states, the feedback form, and the
// public signup page. Every value goes through `html`, which escapes it. Forms post the
// tester's token in their body: it is the credential, so no cookie exists to be ridden by
// another site's form (CSRF); the pages forbid framing and send no Referer (the token is in
// the join URL).
import type { PortalProgram, PortalTester } from '../db/repos/portal.js'
import { html, HTML_TYPE, page, pageSecurityHeaders, type SafeHtml } from './html.js'

export const FEEDBACK_MAX = 10_000

/**
 * Headers of every tester portal page: never cached, never framed, no Referer, no script. Never
 * indexed either: the app sets X-Robots-Tag on every answer at a tester page's path (app.ts,
 * TESTER_PAGES), and the meta robots tag says the same, for the crawlers that read only the page.
 */
export const PAGE_HEADERS = { 'content-type': HTML_TYPE, 'cache-control': 'no-store', ...pageSecurityHeaders() }

const date = (value: Date) => value.toISOString().replace('T', ' ').slice(0, 16) + ' UTC'

function programHeader(program: PortalProgram): SafeHtml {
  return html`<h1>${program.name}</h1>
${program.version ? html`<p class="meta">Version ${program.version}</p>` : ''}
${program.summary ? html`<p>${program.summary}</p>` : ''}
${program.feedback_deadline ? html`<p class="meta">Feedback until ${date(program.feedback_deadline)}</p>` : ''}`
}

/** A page that says what went wrong; `code` is for scripts and tests, the words for people. */
export function messagePage(title: string, message: string, code: string): string {
  return page(title, html`<h1>${title}</h1>
<p class="notice" data-code="${code}">${message}</p>`)
}

export const unknownTokenPage = () =>
  messagePage('Invitation not found', 'This invitation link is not valid. Check that you copied the whole link, or ask the team for a new one.', 'not_found')
export const revokedPage = () => messagePage('Invitation withdrawn', 'This invitation has been withdrawn by the team.', 'revoked')
export const programNotOpenPage = (program: PortalProgram) =>
  program.status === 'closed'
    ? messagePage('This beta has ended', `${program.name} is closed: it no longer takes testers or feedback.`, 'program_closed')
    : messagePage('This beta has not started', `${program.name} is not open yet. Try your link again later.`, 'program_not_open')

function answerForm(token: string, accept: boolean, decline: boolean): SafeHtml {
  return html`<form method="post" action="/beta/join">
<input type="hidden" name="token" value="${token}">
${accept ? html`<button type="submit" name="action" value="accept">Accept the invitation</button>` : ''}
${decline ? html`<button type="submit" name="action" value="decline">Decline</button>` : ''}
</form>`
}

function feedbackForm(token: string, program: PortalProgram, now: Date, error?: string, text = ''): SafeHtml {
  if (program.feedback_deadline && program.feedback_deadline <= now) {
    return html`<h2>Feedback</h2>
<p class="notice" data-code="feedback_closed">Feedback is closed: the deadline was ${date(program.feedback_deadline)}.</p>`
  }
  const ratings = [1, 2, 3, 4, 5]
  return html`<h2>Send feedback</h2>
${error ? html`<p class="notice" role="alert" data-code="validation_failed">${error}</p>` : ''}
<form method="post" action="/beta/feedback">
<input type="hidden" name="token" value="${token}">
<label for="body">Your feedback (up to 10 000 characters)</label>
<textarea id="body" name="body" rows="8" maxlength="${FEEDBACK_MAX}" required>${text}</textarea>
<label for="rating">Rating (optional)</label>
<select id="rating" name="rating">
<option value="">No rating</option>
${ratings.map((r) => html`<option value="${r}">${r} of 5</option>`)}
</select>
<p><button type="submit">Send feedback</button></p>
</form>`
}

/** The access URL and instructions: joined testers only. */
function access(program: PortalProgram): SafeHtml {
  return html`<h2>How to get the beta</h2>
${program.access_url ? html`<p><a href="${program.access_url}" rel="noreferrer noopener">${program.access_url}</a></p>` : ''}
${program.access_instructions ? html`<p style="white-space: pre-line">${program.access_instructions}</p>` : ''}
${!program.access_url && !program.access_instructions ? html`<p>The team will send you access details.</p>` : ''}`
}

export interface JoinView {
  tester: PortalTester
  program: PortalProgram
  now: Date
  /** A feedback form error to show, with the text the tester wrote. */
  feedbackError?: { message: string; text: string }
  thanks?: boolean
}

/** The join page of a tester whose program is active and who is not revoked. */
export function joinPage({ tester, program, now, feedbackError, thanks }: JoinView): string {
  const token = tester.token
  switch (tester.status) {
    case 'joined':
      return page(program.name, html`${programHeader(program)}
<p class="notice" data-code="joined">You have joined this beta. Welcome!</p>
${thanks ? html`<p class="notice" role="status" data-code="feedback_received">Thank you: your feedback was received.</p>` : ''}
${access(program)}
${feedbackForm(token, program, now, feedbackError?.message, feedbackError?.text)}`)
    case 'declined':
      return page(program.name, html`${programHeader(program)}
<p class="notice" data-code="declined">You declined this invitation. Changed your mind? You can still accept.</p>
${answerForm(token, true, false)}`)
    default:
      return page(program.name, html`${programHeader(program)}
<p>You are invited to test this beta.</p>
${answerForm(token, true, true)}`)
  }
}

export function signupPage(program: PortalProgram, action: string, error?: string, email = ''): string {
  return page(program.name, html`${programHeader(program)}
<p>Sign up to test this beta.</p>
${error ? html`<p class="notice" role="alert" data-code="validation_failed">${error}</p>` : ''}
<form method="post" action="${action}">
<label for="email">Email</label>
<input id="email" type="email" name="email" value="${email}" maxlength="254" autocomplete="email" required>
<p><button type="submit">Sign up</button></p>
</form>`)
}

/** After a new signup: the tester's own link, to come back for the access details and feedback. */
export function signedUpPage(program: PortalProgram, joinUrl: string): string {
  return page(program.name, html`${programHeader(program)}
<p class="notice" data-code="joined">You have joined this beta.</p>
<p>Keep this personal link to come back and send feedback: <a href="${joinUrl}">${joinUrl}</a></p>
${access(program)}`)
}

/** An email already on the program: nothing about that tester is shown, since anyone can type any email. */
export function alreadySignedUpPage(program: PortalProgram): string {
  return page(program.name, html`${programHeader(program)}
<p class="notice" data-code="existing">This email is already on this beta. Use the personal link you received to see the access details.</p>`)
}

export const signupNotFoundPage = () => messagePage('Beta not found', 'There is no open beta at this address.', 'not_found')
