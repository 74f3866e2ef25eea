import { notImplemented } from './not-implemented.js'

export const listBetaTesters = notImplemented('listBetaTesters')
export const enrollBetaTester = notImplemented('enrollBetaTester')
export const getBetaTester = notImplemented('getBetaTester')
export const deleteBetaTester = notImplemented('deleteBetaTester')
