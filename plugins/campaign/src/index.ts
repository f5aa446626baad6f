/** The library behind `toolkit campaign`, for programs that embed the generator. */
export {exportRun, generate, type GenerateOptions, resume, type RunOptions, type RunOutcome} from './pipeline.js'
export type {EventLine, RunEvent} from './run/events.js'
export type {MissionSession, Provider, ProviderOptions} from './providers/provider.js'
export {toolSpecs, type ToolSpec} from './tools/registry.js'
export {validateAccount} from './steps/validate.js'
export type * from './types.js'
