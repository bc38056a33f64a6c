// A local agent runs with the gateway's own V8 heap flags and glibc malloc settings, as a session pod's agent gets
// them from the image's launcher (services/boxyard/node-flags says why each one matters): the same memory and GC
// behaviour whichever backend starts it. Only those: the gateway's inspector, profiler, eval or loader flags are
// not the agent's (a second --inspect on the same port would collide), and nothing else of its environment goes.
// Agents also share a compile cache (Node's: the type-stripped sources and V8's code for them) in the backend's
// private directory: an agent loads its code in about half the CPU time (0.23 → 0.11 s) and holds less memory
// (no type stripper loaded: PSS per session 32.8 → 20.8 MiB with 100 sessions), and a spare started beside a new
// session competes less with that session's first keystrokes. The directory is the gateway account's
// (0700): shells running as other accounts can neither read nor change it.
const HEAP_FLAG = /^--(max|min)[-_]semi[-_]space[-_]size=\d+$|^--max[-_]old[-_]space[-_]size=\d+$|^--external[-_]memory[-_]accounted[-_]in[-_]global[-_]limit$/;
const MALLOC_SETTINGS = ['MALLOC_ARENA_MAX', 'MALLOC_MMAP_THRESHOLD_'] as const;

export interface AgentRuntime {
  /** Node/V8 flags to put before the agent's script. */
  flags: string[];
  /** Variables to add to the agent's (otherwise clean) environment (its shell's is built from scratch: identity.ts). */
  env: Record<string, string>;
}

export function agentRuntime(execArgv: readonly string[], env: NodeJS.ProcessEnv, compileCacheDir: string): AgentRuntime {
  const extra: Record<string, string> = { NODE_COMPILE_CACHE: compileCacheDir };
  for (const name of MALLOC_SETTINGS) {
    const value = env[name];
    if (value && /^\d+$/.test(value)) extra[name] = value;
  }
  return { flags: execArgv.filter((flag) => HEAP_FLAG.test(flag)), env: extra };
}
