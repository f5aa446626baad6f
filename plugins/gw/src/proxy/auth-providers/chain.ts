import type {AuthProvider, AuthRequest, AuthResult} from './types.js'

export interface Chain {
  authenticate(req: AuthRequest): AuthResult | Promise<AuthResult>
  readonly names: readonly string[]
}

/**
 * Tries the providers in order; the first that accepts wins. When all reject, the first
 * provider's error is the answer (the spec's rule), so the message a client sees does not depend
 * on which provider happened to be tried last.
 */
export function chain(providers: readonly AuthProvider[]): Chain {
  if (providers.length === 0) throw new Error('an auth chain needs at least one provider')
  const names = providers.map((p) => p.name)
  const authenticate = (req: AuthRequest): AuthResult | Promise<AuthResult> => {
    let first: AuthResult | undefined
    for (let i = 0; i < providers.length; i++) {
      const r = providers[i].authenticate(req)
      if (r instanceof Promise) return finishAsync(r, i, first, req)
      if (r.ok) return r
      first ??= r
    }
    return first!
  }
  const finishAsync = async (pending: Promise<AuthResult>, i: number, first: AuthResult | undefined, req: AuthRequest): Promise<AuthResult> => {
    for (let j = i; j < providers.length; j++) {
      // The first iteration awaits the promise already started above.
      const r = j === i ? await pending : await providers[j].authenticate(req)
      if (r.ok) return r
      first ??= r
    }
    return first!
  }
  return {authenticate, names}
}
