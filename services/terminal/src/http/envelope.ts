// The seed's response shapes: `{success, message, data}` for success, `{success:false, message, details}` for
// errors (rendered by the kit's 'envelope' error handler), and their JSON schemas for the OpenAPI description.

export const ok = <T>(message: string, data: T) => ({ success: true as const, message, data });

export const envelope = (data: Record<string, unknown>, description = 'Success') => ({
  description,
  type: 'object',
  required: ['success', 'message', 'data'],
  properties: { success: { type: 'boolean', const: true }, message: { type: 'string' }, data },
});

const errorBody = {
  type: 'object',
  required: ['success', 'message', 'details'],
  properties: { success: { type: 'boolean', const: false }, message: { type: 'string' }, details: { type: 'string' } },
};

const descriptions: Record<number, string> = {
  400: 'Invalid parameters',
  401: 'Authentication required',
  403: 'Insufficient permissions (or Origin not allowed)',
  404: 'Session does not exist (or belongs to someone else)',
  409: 'Conflict',
  429: 'Too many requests, or a session limit reached (RateLimit-* headers)',
  503: 'The terminal backend could not start the session',
};

export const errors = (...codes: number[]) => Object.fromEntries(codes.map((code) => [code, { description: descriptions[code] ?? 'Error', ...errorBody }]));

export const userSchema = {
  type: 'object',
  required: ['id', 'username', 'role'],
  properties: {
    id: { type: 'string', format: 'uuid' },
    username: { type: 'string' },
    role: { type: 'string', enum: ['admin', 'user'] },
    email: { type: ['string', 'null'] },
  },
};
