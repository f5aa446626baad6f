/** The PostgreSQL-protocol server (work in progress: the wire layer lands next). */
import type {RunningServer, ServerContext} from '../../engine/types.js'

export interface PgServerOptions {
  host: string
  password: string
  port: number
  username: string
}

export async function startPgServer(_ctx: ServerContext, _options: PgServerOptions): Promise<RunningServer> {
  throw new Error('the PostgreSQL-protocol server is not implemented yet')
}
