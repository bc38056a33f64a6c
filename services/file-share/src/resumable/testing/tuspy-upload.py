# A Debian python3-tuspy upload in its own process (the resume tests kill it):
#   python3 tuspy-upload.py <endpoint> <file> <authorization> <share path> <chunk bytes> [upload URL to resume]
# An empty <authorization> sends none; a <share path> without a leading `/` is sent as the `filename` (a file request).
# Prints `url <upload URL>` and `offset <n>` after each chunk (sent with a sha1 Upload-Checksum), `done`.
import sys

from tusclient import client

endpoint, file, authorization, path, chunk = sys.argv[1:6]
resume = sys.argv[6] if len(sys.argv) > 6 else None
tus = client.TusClient(endpoint, headers={"Authorization": authorization} if authorization else {})
metadata = {"path": path} if path.startswith("/") else {"filename": path}
uploader = tus.uploader(file, url=resume, chunk_size=int(chunk), metadata=metadata, upload_checksum=True)
while uploader.offset < uploader.get_file_size():
    uploader.upload_chunk()
    print("url", uploader.url, flush=True)
    print("offset", uploader.offset, flush=True)
print("done", flush=True)
