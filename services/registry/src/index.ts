export { services, findService } from './services.ts';
