import { notImplemented } from './not-implemented.js'

export const listBetaPrograms = notImplemented('listBetaPrograms')
export const createBetaProgram = notImplemented('createBetaProgram')
export const getBetaProgram = notImplemented('getBetaProgram')
export const updateBetaProgram = notImplemented('updateBetaProgram')
export const deleteBetaProgram = notImplemented('deleteBetaProgram')
