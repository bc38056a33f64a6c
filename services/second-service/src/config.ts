import { loggingSchema, metricsSchema, serverSchema } from '@boxyard/kit';
import { z } from 'zod';

export const DEFAULT_PORT = 8099;
/** /metrics listens apart from the public port (loopback by default). */
export const DEFAULT_METRICS_PORT = 9303;

export const secondServiceConfigSchema = z.strictObject({
  server: serverSchema
    .extend({
      port: serverSchema.shape.port.default(DEFAULT_PORT),
      // The seed's listener is HTTPS: on by default, with a generated self-signed certificate unless one is given.
      tls: serverSchema.shape.tls
        .unwrap()
        .extend({ enabled: z.boolean().default(true) })
        .prefault({}),
    })
    .prefault({}),
  metrics: metricsSchema.prefault({}),
  logging: loggingSchema,
  /** Where a generated self-signed certificate is kept between restarts (none: regenerated each start). */
  state_dir: z.string().optional(),
});

export type SecondServiceConfig = z.output<typeof secondServiceConfigSchema>;
