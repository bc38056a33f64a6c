// The one error type routes throw. Each service renders it in its own shape (problem details or envelope).

/** One failing value: where it is (JSON pointer), which rule it broke, the rule's parameters, and why. */
export interface FieldError {
  pointer: string;
  rule: string;
  params: Record<string, unknown>;
  detail: string;
}

/** Problem kinds; the problem-details `type` is `{problem_base}/{kind}`. */
export type ProblemKind =
  | 'validation'
  | 'bad-request'
  | 'authentication'
  | 'forbidden'
  | 'not-found'
  | 'method-not-allowed'
  | 'conflict'
  | 'timeout'
  | 'payload-too-large'
  | 'unsupported-media-type'
  | 'range-not-satisfiable'
  | 'throttled'
  | 'insufficient-storage'
  | 'bad-gateway'
  | 'unavailable'
  | 'internal';

const kindByStatus: Record<number, ProblemKind> = {
  400: 'bad-request',
  401: 'authentication',
  403: 'forbidden',
  404: 'not-found',
  405: 'method-not-allowed',
  408: 'timeout',
  409: 'conflict',
  413: 'payload-too-large',
  415: 'unsupported-media-type',
  416: 'range-not-satisfiable',
  422: 'validation',
  429: 'throttled',
  502: 'bad-gateway',
  503: 'unavailable',
  507: 'insufficient-storage',
};

export const kindOf = (status: number): ProblemKind => kindByStatus[status] ?? (status >= 500 ? 'internal' : 'bad-request');

export class HttpError extends Error {
  override name = 'HttpError';
  readonly statusCode: number;
  readonly kind: ProblemKind;
  readonly errors: FieldError[];
  readonly headers: Record<string, string>;

  constructor(statusCode: number, message: string, options: { kind?: ProblemKind; errors?: FieldError[]; headers?: Record<string, string> } = {}) {
    super(message);
    this.statusCode = statusCode;
    this.kind = options.kind ?? kindOf(statusCode);
    this.errors = options.errors ?? [];
    this.headers = options.headers ?? {};
  }
}

export const badRequest = (message: string, errors?: FieldError[]) => new HttpError(400, message, { errors: errors ?? [] });
export const unauthorized = (message = 'Authentication required', headers?: Record<string, string>) => new HttpError(401, message, { headers: headers ?? {} });
export const forbidden = (message = 'Insufficient permissions') => new HttpError(403, message);
export const notFound = (message = 'Not found') => new HttpError(404, message);
export const conflict = (message: string, errors?: FieldError[]) => new HttpError(409, message, { errors: errors ?? [] });
export const unprocessable = (message: string, errors: FieldError[]) => new HttpError(422, message, { errors });
