import type {TokenStore, TokenStoreRequest} from '@toolkit/kit'

import {createTokenStore} from '../lib/token-store.js'

export default async function tokenStoreHook(options: TokenStoreRequest): Promise<TokenStore> {
  return createTokenStore(options.file)
}
