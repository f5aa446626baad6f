/** A Node or undici network error code in words: "connection refused", "host not found", ... */
export function networkCodeReason(code: unknown): string | undefined {
  switch (code) {
    case 'ECONNREFUSED': {
      return 'connection refused'
    }
    case 'ECONNRESET':
    case 'EPIPE':
    case 'UND_ERR_SOCKET': {
      return 'connection reset'
    }
    case 'ENOTFOUND':
    case 'EAI_AGAIN': {
      return 'host not found'
    }
    case 'ETIMEDOUT':
    case 'UND_ERR_CONNECT_TIMEOUT': {
      return 'connection timed out'
    }
    case 'CERT_HAS_EXPIRED':
    case 'DEPTH_ZERO_SELF_SIGNED_CERT':
    case 'UNABLE_TO_VERIFY_LEAF_SIGNATURE': {
      return `TLS certificate error (${code})`
    }
    default: {
      return undefined
    }
  }
}

/** The network cause of a failed fetch, looked for along the error's causes. */
export function networkReason(error: unknown): string | undefined {
  let e = error as {cause?: unknown; code?: unknown} | undefined
  for (let depth = 0; e && depth < 5; depth++) {
    const reason = networkCodeReason(e.code)
    if (reason) return reason
    e = e.cause as typeof e
  }
  return undefined
}
