export { services, findService } from './services.ts';
export { kinds, findKind } from './kinds.ts';
