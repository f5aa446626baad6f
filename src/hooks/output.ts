import type {Output, OutputRequest} from '@toolkit/kit'

import {createOutput} from '../lib/output.js'

export default async function outputHook(options: OutputRequest): Promise<Output> {
  return createOutput(options.format)
}
