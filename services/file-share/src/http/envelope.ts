// The seed's success envelope. Errors use the kit's envelope error shape ({success:false, message, details}).
export interface Envelope<T> {
  success: true;
  message: string;
  data: T;
}

export const ok = <T>(message: string, data: T): Envelope<T> => ({ success: true, message, data });

/** JSON schema of an envelope around `data`, for route documentation. */
export const envelopeSchema = (data: Record<string, unknown>, description?: string) => ({
  type: 'object',
  ...(description ? { description } : {}),
  properties: { success: { type: 'boolean', const: true }, message: { type: 'string' }, data },
  required: ['success', 'message', 'data'],
});

export const errorSchema = {
  type: 'object',
  properties: { success: { type: 'boolean', const: false }, message: { type: 'string' }, details: { type: 'string' } },
  required: ['success', 'message', 'details'],
};
