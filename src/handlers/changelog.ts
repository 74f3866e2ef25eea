import { notImplemented } from './not-implemented.js'

export const listChangelogEntries = notImplemented('listChangelogEntries')
export const createChangelogEntry = notImplemented('createChangelogEntry')
export const getChangelogEntry = notImplemented('getChangelogEntry')
export const updateChangelogEntry = notImplemented('updateChangelogEntry')
export const deleteChangelogEntry = notImplemented('deleteChangelogEntry')
