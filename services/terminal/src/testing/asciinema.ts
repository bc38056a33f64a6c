// Debian's asciinema 2.2.0 as the independent reader of our recordings (Makefile TEST_PACKAGES).
import { spawn } from 'node-pty';

/** `asciinema cat FILE`: the output stream of a recording. It reads /dev/tty, so it runs on a pty. */
export function asciinemaCat(file: string, home: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const term = spawn('asciinema', ['cat', file], {
      cols: 120,
      rows: 40,
      env: { PATH: '/usr/bin:/bin', HOME: home, LANG: 'C.UTF-8', TERM: 'xterm-256color' },
    });
    let out = '';
    term.onData((data) => (out += data));
    term.onExit(({ exitCode }) => (exitCode === 0 ? resolve(out) : reject(new Error(`asciinema cat exited with ${exitCode}: ${out}`))));
  });
}
