// What a plugin's build links in place of `@oclif/core` (scripts/build-plugin.mjs): the host's
// bundled copy when toolkit runs the plugin (src/entry.ts lends it), so a plugin command does not
// load a second copy of oclif and semver from node_modules; the package itself anywhere else (the
// `oclif manifest` CLI, another oclif host). Our plugins use only these three values.
const host = globalThis[Symbol.for('toolkit.host-oclif-core')]
const core = host ?? (await import('@oclif/core'))

export const {Args, Command, Flags} = core
