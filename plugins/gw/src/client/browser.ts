/**
 * Shows the authorization URL: always printed (stderr), and opened in the browser when a
 * person is there to see it (a terminal, and a display on Linux).
 */
export async function showAuthorizationUrl(url: string, log: (msg: string) => void, env: Record<string, string | undefined> = process.env): Promise<void> {
  log(`Open this URL to sign in:\n  ${url}`)
  const hasDisplay = process.platform === 'darwin' || process.platform === 'win32' || Boolean(env.DISPLAY || env.WAYLAND_DISPLAY)
  if (!process.stderr.isTTY || !hasDisplay || env.GW_NO_BROWSER) return
  try {
    const {default: open} = await import('open')
    const child = await open(url)
    child.on('error', () => {})
    child.unref()
  } catch {
    // The printed URL is the fallback.
  }
}
