// Column types as slonik 49 hands them over: int8 (bigint) arrives as a JS BigInt, which JSON can't carry;
// our ids and sizes stay far below 2^53, so they become plain numbers here.
import { z } from 'zod';

export const int8 = z.union([z.bigint(), z.number()]).transform(Number);
