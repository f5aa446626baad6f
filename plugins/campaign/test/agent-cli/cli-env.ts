import {delimiter, dirname, join} from 'node:path'

import {repoRoot} from '../helpers.js'

/** PATH with the agent CLIs installed as dev dependencies, node, and the system tools. */
export const cliPath = [join(repoRoot, 'node_modules', '.bin'), dirname(process.execPath), '/usr/local/bin', '/usr/bin', '/bin'].join(delimiter)
