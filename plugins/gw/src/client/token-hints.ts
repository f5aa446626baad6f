/** Where a user gets a token for a popular service whose MCP server has no dynamic registration. */
export interface TokenHint {
  hosts: string[]
  service: string
  tokenType: string
  where: string
}

/** Twelve services; matched by the server URL's host or a parent domain. */
export const TOKEN_HINTS: TokenHint[] = [
  {hosts: ['github.com', 'githubcopilot.com'], service: 'GitHub', tokenType: 'Personal Access Token', where: 'https://github.com/settings/personal-access-tokens'},
  {hosts: ['gitlab.com'], service: 'GitLab', tokenType: 'Personal Access Token', where: 'https://gitlab.com/-/user_settings/personal_access_tokens'},
  {hosts: ['slack.com'], service: 'Slack', tokenType: 'Bot/User Token', where: 'https://api.slack.com/apps (your app > OAuth & Permissions)'},
  {hosts: ['notion.com', 'notion.so'], service: 'Notion', tokenType: 'Integration Token', where: 'https://www.notion.so/my-integrations'},
  {hosts: ['linear.app'], service: 'Linear', tokenType: 'API Key', where: 'https://linear.app/settings/account/security'},
  {hosts: ['sentry.io', 'sentry.dev'], service: 'Sentry', tokenType: 'Auth Token', where: 'https://sentry.io/settings/account/api/auth-tokens/'},
  {hosts: ['stripe.com'], service: 'Stripe', tokenType: 'API Key', where: 'https://dashboard.stripe.com/apikeys'},
  {hosts: ['atlassian.com', 'atlassian.net'], service: 'Atlassian (Jira, Confluence)', tokenType: 'API Token', where: 'https://id.atlassian.com/manage-profile/security/api-tokens'},
  {hosts: ['cloudflare.com'], service: 'Cloudflare', tokenType: 'API Token', where: 'https://dash.cloudflare.com/profile/api-tokens'},
  {hosts: ['vercel.com'], service: 'Vercel', tokenType: 'API Token', where: 'https://vercel.com/account/settings/tokens'},
  {hosts: ['googleapis.com', 'google.com'], service: 'Google Cloud', tokenType: 'Service Account Token', where: 'https://console.cloud.google.com/iam-admin/serviceaccounts (then `gcloud auth print-access-token`)'},
  {hosts: ['supabase.com', 'supabase.co'], service: 'Supabase', tokenType: 'Personal Access Token', where: 'https://supabase.com/dashboard/account/tokens'},
]

export function tokenHint(serverUrl: string): TokenHint | undefined {
  let host: string
  try {
    host = new URL(serverUrl).hostname.toLowerCase()
  } catch {
    return undefined
  }
  return TOKEN_HINTS.find((h) => h.hosts.some((d) => host === d || host.endsWith(`.${d}`)))
}
