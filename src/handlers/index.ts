import type { HandlerMap } from '../http/types.js'
import * as admin from './admin.js'
import * as programs from './beta-programs.js'
import * as testers from './beta-testers.js'
import * as changelog from './changelog.js'
import * as feedback from './feedback.js'
import * as metrics from './metrics.js'
import * as ops from './ops.js'
import * as portalBeta from './portal-beta.js'
import * as portalChangelog from './portal-changelog.js'

/** One handler per operationId of openapi.yaml; the compiler names any that is missing. */
export const handlers = {
  listBetaPrograms: programs.listBetaPrograms,
  createBetaProgram: programs.createBetaProgram,
  getBetaProgram: programs.getBetaProgram,
  updateBetaProgram: programs.updateBetaProgram,
  deleteBetaProgram: programs.deleteBetaProgram,
  listBetaTesters: testers.listBetaTesters,
  enrollBetaTester: testers.enrollBetaTester,
  getBetaTester: testers.getBetaTester,
  updateBetaTester: testers.updateBetaTester,
  deleteBetaTester: testers.deleteBetaTester,
  listBetaFeedback: feedback.listBetaFeedback,
  getBetaFeedback: feedback.getBetaFeedback,
  listChangelogEntries: changelog.listChangelogEntries,
  createChangelogEntry: changelog.createChangelogEntry,
  getChangelogEntry: changelog.getChangelogEntry,
  updateChangelogEntry: changelog.updateChangelogEntry,
  deleteChangelogEntry: changelog.deleteChangelogEntry,
  getBetaJoinPage: portalBeta.getBetaJoinPage,
  answerBetaInvitation: portalBeta.answerBetaInvitation,
  submitBetaFeedback: portalBeta.submitBetaFeedback,
  getBetaSignupPage: portalBeta.getBetaSignupPage,
  submitBetaSignup: portalBeta.submitBetaSignup,
  getPortalChangelogPage: portalChangelog.getPortalChangelogPage,
  getPortalChangelogAtom: portalChangelog.getPortalChangelogAtom,
  getPortalChangelogJsonFeed: portalChangelog.getPortalChangelogJsonFeed,
  adminListProjects: admin.adminListProjects,
  adminCreateProject: admin.adminCreateProject,
  adminGetProject: admin.adminGetProject,
  adminUpdateProject: admin.adminUpdateProject,
  adminListApiKeys: admin.adminListApiKeys,
  adminCreateApiKey: admin.adminCreateApiKey,
  adminUpdateApiKey: admin.adminUpdateApiKey,
  adminRevokeApiKey: admin.adminRevokeApiKey,
  getMetrics: metrics.getMetrics,
  getHealth: ops.getHealth,
  getReady: ops.getReady,
  getOpenApiJson: ops.getOpenApiJson,
  getOpenApiYaml: ops.getOpenApiYaml,
  getOperatorOpenApiJson: ops.getOperatorOpenApiJson,
  getPortalOpenApiJson: ops.getPortalOpenApiJson,
} satisfies HandlerMap
