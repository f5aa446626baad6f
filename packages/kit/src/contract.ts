/**
 * The shared-hook contract. A plugin fires these events with `this.config.runHook(event, options)`
 * and takes the service object the host returns in `successes[0].result`. Nothing here needs
 * more than @oclif/core, so a third-party plugin can use the same services.
 */
export type OutputFormat = 'json' | 'text'

export interface Spinner {
  fail(text?: string): void
  succeed(text?: string): void
  update(text: string): void
}

export interface Palette {
  bold(s: string): string
  cyan(s: string): string
  dim(s: string): string
  green(s: string): string
  red(s: string): string
  yellow(s: string): string
}

export interface Output {
  readonly color: Palette
  readonly format: OutputFormat
  /** Human progress or information: always stderr, so stdout stays clean for records. */
  log(message: string): void
  /**
   * One result. json: the record as one line on stdout. text: `text` (or `key: value` lines) on stdout.
   */
  record(record: Record<string, unknown>, text?: string): void
  /** A spinner on stderr; a no-op unless text format and stderr is a TTY. */
  spinner(text: string): Spinner
  warn(message: string): void
}

export interface OutputRequest {
  format: OutputFormat
}

export type ConfigValue = boolean | number | string | string[]

export interface ConfigRequest<T extends Record<string, ConfigValue>> {
  defaults: T
  /** Environment to read; the process environment when omitted. */
  env?: Record<string, string | undefined>
  /** Only the flags the user actually set. */
  flags?: Partial<T>
  /**
   * The plugin's own configuration files (svc's `config.edn`, gw's `servers.json`), already
   * parsed by the plugin into keys of `defaults`: each is one layer above toolkit's config files
   * and below the environment, in the order given.
   */
  layers?: ConfigLayer[]
  /** Section of config.json and name of `<namespace>.json` in the config directory. */
  namespace: string
}

export interface ConfigLayer {
  /** Absolute path of the file, shown as the source `file:<path>[:<line>]`. */
  file: string
  /** The line of each value in the file, where the plugin knows it. */
  lines?: Record<string, number>
  /** Values read from the file; only keys of `defaults`, of the same types. */
  values: Record<string, ConfigValue>
}

/**
 * What a plugin answers to `toolkit:config-sections` (fired by `toolkit config show`): the
 * request it makes when it loads its settings with no flags, so the host can show every value
 * of every plugin and where it came from. `cwd` is where the plugin looks for its own files.
 */
export interface ConfigSectionsRequest {
  cwd: string
  env?: Record<string, string | undefined>
}

export interface ConfigResult<T> {
  /** The config files that exist and were read, lowest precedence first. */
  files: string[]
  /** Where each value came from: `default`, `file:<path>:<line>`, `env:<NAME>` or `flag`. */
  sources: Record<keyof T & string, string>
  values: T
}

export interface ClientEntry {
  [extra: string]: unknown
  client_id: string
  client_secret?: string
  redirect_uri?: string
}

export interface TokenEntry {
  [extra: string]: unknown
  access_token: string
  /** Seconds since the Unix epoch. */
  expires_at?: number
  refresh_token?: string
  token_type?: string
}

export interface TokenFile {
  [extra: string]: unknown
  clients: Record<string, ClientEntry>
  tokens: Record<string, TokenEntry>
}

export interface TokenStore {
  readonly file: string
  get(url: string): Promise<{client?: ClientEntry; token?: TokenEntry}>
  read(): Promise<TokenFile>
  /** Removes the client registration, the token, or both for a URL. */
  remove(url: string, what?: 'all' | 'client' | 'token'): Promise<void>
  setClient(url: string, client: ClientEntry): Promise<void>
  setToken(url: string, token: TokenEntry): Promise<void>
  /** Locked read-modify-write; the file is replaced atomically with mode 0600. */
  update(mutate: (data: TokenFile) => Promise<void> | void): Promise<TokenFile>
  /**
   * Runs `work` while holding an exclusive lock on the entry of `url`, across processes (a lock
   * directory next to the file), waiting a bounded time for another holder. For exchanges that
   * must happen once, such as redeeming a single-use refresh token: re-read the entry inside.
   * Optional so older hosts and test doubles still satisfy the interface.
   */
  exclusive?<T>(url: string, work: () => Promise<T>): Promise<T>
}

export interface TokenStoreRequest {
  /** Absolute path of the store file. */
  file: string
}

export const HOOK_CONFIG = 'toolkit:config'
export const HOOK_CONFIG_SECTIONS = 'toolkit:config-sections'
export const HOOK_OUTPUT = 'toolkit:output'
export const HOOK_TOKEN_STORE = 'toolkit:token-store'

declare module '@oclif/core' {
  interface Hooks {
    'toolkit:config': {options: ConfigRequest<Record<string, ConfigValue>>; return: ConfigResult<Record<string, ConfigValue>>}
    'toolkit:config-sections': {options: ConfigSectionsRequest; return: Array<ConfigRequest<Record<string, ConfigValue>>>}
    'toolkit:output': {options: OutputRequest; return: Output}
    'toolkit:token-store': {options: TokenStoreRequest; return: TokenStore}
  }
}
