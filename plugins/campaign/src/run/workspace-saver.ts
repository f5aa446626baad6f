import {writeFileAtomic} from '@toolkit/kit'
import {join} from 'node:path'

import type {Workspace} from '../types.js'
import {WORKSPACE_FILE, workspaceText} from './workspace-store.js'

/**
 * Saves workspace.json while missions run, as saveWorkspace does (a temporary file renamed over
 * it), but off the event loop and in groups. Writing the whole file after every tool call, in
 * the one thread every mission shares, made parallel missions wait for each other's disk writes
 * (about 10 ms each for a 40-campaign account on a busy machine). Here a save asked for while a
 * write is under way joins the next write, which starts when that one ends and takes its snapshot
 * then. Each caller's promise resolves once a snapshot taken after its call is on disk, so a tool
 * call still reports success only when its change is saved.
 */
export class WorkspaceSaver {
  private current: null | Promise<void> = null
  private queued: null | Promise<void> = null

  constructor(
    private readonly runDir: string,
    private readonly ws: Workspace,
  ) {}

  /** Resolves when every save asked for so far is on disk. */
  async idle(): Promise<void> {
    while (this.queued ?? this.current) await (this.queued ?? this.current)?.catch(() => {})
  }

  save(): Promise<void> {
    if (this.queued) return this.queued
    if (!this.current) return this.start()
    this.queued = this.current.then(
      () => this.start(),
      () => this.start(),
    )
    return this.queued
  }

  private start(): Promise<void> {
    // Saves asked for from here on need a snapshot taken after this one.
    this.queued = null
    const file = join(this.runDir, WORKSPACE_FILE)
    const text = workspaceText(this.ws)
    const write = writeFileAtomic(file, text, {fsync: false})
    const tracked: Promise<void> = write.finally(() => {
      if (this.current === tracked) this.current = null
    })
    this.current = tracked
    return tracked
  }
}
