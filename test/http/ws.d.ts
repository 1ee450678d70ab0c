// The little of the `ws` package (a devDependency that ships no types) that these tests use: a
// WebSocket client for Node 20, which has no global one.
declare module 'ws' {
  export default class WebSocket {
    static readonly OPEN: 1;
    constructor(url: string, protocols?: string[]);
    readonly readyState: number;
    on(event: 'open', listener: () => void): this;
    on(event: 'close', listener: (code: number, reason: Buffer) => void): this;
    on(event: 'error', listener: (err: Error) => void): this;
    once(event: 'open', listener: () => void): this;
    once(event: 'error', listener: (err: Error) => void): this;
    close(code?: number, reason?: string): void;
  }
}
