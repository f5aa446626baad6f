import {ToolkitError} from '@toolkit/kit'

/** Exit codes of gw, documented in docs/gw.md. */
export const EXIT = {auth: 3, generic: 1, toolError: 1, unreachable: 4, usage: 2} as const

/** No credential is accepted and none can be obtained without a human: exit 3. */
export class AuthError extends ToolkitError {
  constructor(message: string, code = 'auth_required', cause?: unknown) {
    super(message, {cause, code, exit: EXIT.auth})
    this.name = 'AuthError'
  }
}

/** The server cannot be reached or does not speak MCP: exit 4. */
export class UnreachableError extends ToolkitError {
  constructor(message: string, cause?: unknown) {
    super(message, {cause, code: 'server_unreachable', exit: EXIT.unreachable})
    this.name = 'UnreachableError'
  }
}

/** OAuth dynamic registration is not offered or was refused: the manual prompt takes over. */
export class RegistrationUnavailable extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'RegistrationUnavailable'
  }
}
