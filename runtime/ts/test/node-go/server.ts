// Runs cmd/tio-conformance (built from this tree) as a process for the
// Node ↔ Go tests: --ws-only on a free port, its readiness line read from
// stdout, its log (each session's end with its §10.2 code) kept.

import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../../..');

let built: string | undefined;

/** The conformance server's binary: $TIO_CONFORMANCE, or built from this tree once per process. */
export function conformanceBinary(): string {
  const given = process.env['TIO_CONFORMANCE'];
  if (given !== undefined && given !== '') return given;
  if (built === undefined) {
    const out = join(mkdtempSync(join(tmpdir(), 'tio-node-go-')), 'tio-conformance');
    execFileSync('go', ['build', '-o', out, './cmd/tio-conformance'], { cwd: repoRoot, stdio: ['ignore', 'inherit', 'inherit'] });
    built = out;
  }
  return built;
}

/** The readiness line (cmd/tio-conformance's Ready). */
export interface Ready {
  readonly url: string;
  readonly certSha256: string;
  readonly tcp: string;
  readonly ws: string;
}

export class Server {
  private constructor(
    readonly ready: Ready,
    private readonly proc: ChildProcess,
    private readonly log: string[],
    readonly exited: Promise<number | null>,
  ) {}

  /** Starts the server with args (--ws-only and --addr 127.0.0.1:0 unless addr is given). */
  static async start(opts: { addr?: string; token?: string } = {}): Promise<Server> {
    const args = ['--ws-only', '--addr', opts.addr ?? '127.0.0.1:0'];
    if (opts.token !== undefined) args.push('--authorize-token', opts.token);
    const proc = spawn(conformanceBinary(), args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const log: string[] = [];
    let partial = '';
    proc.stderr!.setEncoding('utf8').on('data', (s: string) => {
      const lines = (partial + s).split('\n');
      partial = lines.pop() ?? '';
      log.push(...lines);
    });
    const exited = new Promise<number | null>((res) => proc.on('exit', (code) => res(code)));
    const ready = await new Promise<Ready>((res, rej) => {
      let out = '';
      const timer = setTimeout(() => rej(new Error(`tio-conformance printed no readiness line within 20 s; log:\n${log.join('\n')}`)), 20000);
      proc.stdout!.setEncoding('utf8').on('data', (s: string) => {
        out += s;
        const nl = out.indexOf('\n');
        if (nl < 0) return;
        clearTimeout(timer);
        try {
          res(JSON.parse(out.slice(0, nl)) as Ready);
        } catch (err) {
          rej(err);
        }
      });
      void exited.then((code) => {
        clearTimeout(timer);
        rej(new Error(`tio-conformance exited ${code} before it was ready; log:\n${log.join('\n')}`));
      });
    });
    return new Server(ready, proc, log, exited);
  }

  /** The server's log lines so far. */
  lines(): readonly string[] {
    return this.log;
  }

  /** Waits until a log line matches re, for at most ms. */
  async waitForLog(re: RegExp, ms = 5000): Promise<string> {
    const deadline = Date.now() + ms;
    for (;;) {
      const hit = this.log.find((l) => re.test(l));
      if (hit !== undefined) return hit;
      if (Date.now() > deadline) throw new Error(`no server log line matches ${re} within ${ms} ms; log:\n${this.log.join('\n')}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** SIGKILL: the process dies with its sessions open, as a crash does (§11: no close code). */
  async kill(): Promise<void> {
    this.proc.kill('SIGKILL');
    await this.exited;
  }

  /** SIGTERM: the server closes every session WT_NO_ERROR and exits 0. */
  async stop(): Promise<number | null> {
    this.proc.kill('SIGTERM');
    return this.exited;
  }
}
