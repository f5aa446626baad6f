/**
 * A connection's portals (or statements) by name, the unnamed one in a field of its own. Drivers
 * and pgbench bind the unnamed portal for every query and Sync drops it: as the only entry of a
 * Map, that was a table shrunk on each delete and grown again on the next set (about 1% of a
 * prepared point select's server CPU, issue 26, docs/benchmarks.md).
 */
export class Named<T> {
  private readonly named = new Map<string, T>()
  private unnamed: T | undefined

  clear(): void {
    this.named.clear()
    this.unnamed = undefined
  }

  delete(name: string): void {
    if (name === '') this.unnamed = undefined
    else this.named.delete(name)
  }

  get(name: string): T | undefined {
    return name === '' ? this.unnamed : this.named.get(name)
  }

  set(name: string, value: T): void {
    if (name === '') this.unnamed = value
    else this.named.set(name, value)
  }
}
