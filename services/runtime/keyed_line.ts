/**
 * Work for one key at a time, in the order it came; other keys are not held up. For a
 * check that reads a count and then acts on it (an account's open uploads): run one
 * after another, each sees what the one before it did, where run side by side every one
 * read the same count and all passed.
 */
export class KeyedLine {
  readonly #tails = new Map<string, Promise<void>>();

  /** Runs `work` once every earlier work of `key` has settled; its result. */
  async run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const before = this.#tails.get(key);
    let done!: () => void;
    const mine = new Promise<void>((r) => done = r);
    const tail = (before ?? Promise.resolve()).then(() => mine);
    this.#tails.set(key, tail);
    try {
      await before;
      return await work();
    } finally {
      done();
      // The last in line leaves no entry behind.
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    }
  }

  /** Keys with work running or waiting (a bounded map: entries go with their work). */
  get size(): number {
    return this.#tails.size;
  }
}
