/**
 * The Node.js API of the svc plugin: open a data directory and use the engine directly.
 *
 *   import {openEngine} from '@toolkit/plugin-svc'
 *   const db = await openEngine('./data')
 *   await db.put({id: 'users:1', name: 'Ada'})
 *   await db.close()
 */
export * from './engine/index.js'
