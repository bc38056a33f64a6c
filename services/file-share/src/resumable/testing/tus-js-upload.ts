// A tus-js-client upload in its own process, as a user's Node script would run it (the resume tests kill it):
//   node tus-js-upload.ts <endpoint> <file> <authorization> <share path> <chunk bytes> [upload URL to resume]
// An empty <authorization> sends none (a file request's link); a <share path> without a leading `/` is sent as the
// `filename` (the name in a file request's folder).
// Prints `url <upload URL>` once created, `progress <sent> <total>` as bytes go out, and `done` at the end.
import { createReadStream, statSync } from 'node:fs';
import { Upload } from 'tus-js-client';

const [endpoint, file, authorization, path, chunkSize, uploadUrl] = process.argv.slice(2) as [string, string, string, string, string, string | undefined];
const upload = new Upload(createReadStream(file), {
  endpoint,
  ...(uploadUrl ? { uploadUrl } : {}),
  chunkSize: Number(chunkSize),
  uploadSize: statSync(file).size,
  headers: authorization ? { authorization } : {},
  metadata: path.startsWith('/') ? { path } : { filename: path },
  retryDelays: [0, 500, 1000, 2000],
  onUploadUrlAvailable: () => console.log(`url ${upload.url}`),
  onProgress: (sent, total) => console.log(`progress ${sent} ${total}`),
  onSuccess: () => console.log('done'),
  onError: (error) => {
    console.error(String(error));
    process.exit(1);
  },
});
upload.start();
