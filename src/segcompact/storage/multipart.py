"""A new S3 object streamed in as a multipart upload of fixed-size parts, completed last.

s3fs' own file grows a ``BytesIO`` past its block size and copies each part out of it, and
aiohttp copies a ``bytes`` body twice more as it sends it: some four parts' worth in memory per
upload. Here one part buffer is allocated once, filled in place, and sent as a stream over it
(which botocore and aiohttp read in chunks of a few hundred KiB), then filled again: an upload
holds one part, whatever the object's size, and sends one part at a time. The object appears
only when the upload is completed with ``If-None-Match: *`` (below one part: a single
conditional PUT); until then, and after a kill -9, nothing is under its name (an unfinished
multipart upload is invisible; a bucket lifecycle rule aborts it).
"""

from __future__ import annotations

import contextlib
import io
from typing import Any

PART_BYTES = 8 << 20  # S3's least part is 5 MiB (but the last); 1,250 parts make 10 GiB


def lost_race(e: OSError) -> bool:
    """Whether a conditional write (``If-None-Match: *``) failed because the name is taken.
    s3fs says so with :class:`FileExistsError` only when the store names the condition; MinIO
    answers a bare 412 PreconditionFailed."""
    if isinstance(e, FileExistsError):
        return True
    response = getattr(e.__cause__, "response", None) or {}
    return bool(response.get("Error", {}).get("Code") == "PreconditionFailed")


class MultipartNewFile:
    """An object at ``path`` of the s3fs file system ``fs``, published by :meth:`publish`."""

    def __init__(self, fs: Any, path: str) -> None:
        self._fs = fs
        self._bucket, self._key, _ = fs.split_path(path)
        self._part = bytearray(PART_BYTES)
        self._filled = 0
        self._upload_id: str | None = None
        self._parts: list[dict[str, Any]] = []

    def write(self, data: bytes, /) -> int:
        view = memoryview(data).cast("B")
        size = len(view)
        while view:
            take = min(len(view), len(self._part) - self._filled)
            self._part[self._filled : self._filled + take] = view[:take]
            self._filled += take
            view = view[take:]
            if self._filled == len(self._part):
                self._send_part()
        return size

    def _call(self, method: str, **kwargs: Any) -> dict[str, Any]:
        """Call the S3 API in s3fs' event loop, on its client. Not through s3fs' ``call_s3``:
        its retries call again with the same arguments, a body already read among them;
        botocore's own retries rewind it (and give up as s3fs' would)."""
        from botocore.exceptions import BotoCoreError, ClientError
        from fsspec.asyn import sync
        from s3fs.errors import translate_boto_error

        async def call() -> dict[str, Any]:
            await self._fs.set_session()
            client = await self._fs.get_s3(self._bucket)
            out: dict[str, Any] = await getattr(client, method)(
                Bucket=self._bucket, Key=self._key, **kwargs
            )
            return out

        try:
            result: dict[str, Any] = sync(self._fs.loop, call)
        except ClientError as e:
            raise translate_boto_error(e) from e
        except BotoCoreError as e:  # the store unreachable, after botocore's retries
            raise OSError(f"s3://{self._bucket}/{self._key}: {e}") from e
        return result

    def _send(self, method: str, **kwargs: Any) -> dict[str, Any]:
        """Call ``method`` with what the part buffer holds as its body."""
        with _Body(memoryview(self._part)[: self._filled]) as body:
            return self._call(method, Body=body, **kwargs)

    def _send_part(self) -> None:
        if self._upload_id is None:
            self._upload_id = str(self._call("create_multipart_upload")["UploadId"])
        number = len(self._parts) + 1
        out = self._send("upload_part", UploadId=self._upload_id, PartNumber=number)
        self._parts.append({"PartNumber": number, "ETag": out["ETag"]})
        self._filled = 0

    def publish(self) -> bool:
        try:
            if self._upload_id is None:
                self._send("put_object", IfNoneMatch="*")
            else:
                if self._filled:
                    self._send_part()
                self._call(
                    "complete_multipart_upload",
                    UploadId=self._upload_id,
                    MultipartUpload={"Parts": self._parts},
                    IfNoneMatch="*",
                )
                self._upload_id = None
        except OSError as e:
            if not lost_race(e):
                raise
            self.discard()
            return False
        finally:
            self._part = bytearray()
        return True

    def discard(self) -> None:
        self._part = bytearray()
        if self._upload_id is not None:
            upload, self._upload_id = self._upload_id, None
            # Best effort: the error being raised matters more, and a lifecycle rule aborts
            # what is left.
            with contextlib.suppress(OSError):
                self._call("abort_multipart_upload", UploadId=upload)


class _Body(io.RawIOBase):
    """A part as a stream for botocore (which reads it to sign it and to checksum it, and
    rewinds it to retry) and aiohttp (which reads it to send it): read in chunks, never copied
    whole. Closing it releases the part buffer."""

    def __init__(self, view: memoryview) -> None:
        super().__init__()
        self._view = view
        self._at = 0

    def __len__(self) -> int:
        return len(self._view)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._at

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._at, io.SEEK_END: len(self._view)}[whence]
        self._at = min(max(0, base + offset), len(self._view))
        return self._at

    def readinto(self, buffer: Any) -> int:
        out = memoryview(buffer).cast("B")
        n = min(len(out), len(self._view) - self._at)
        out[:n] = self._view[self._at : self._at + n]
        self._at += n
        return n

    def read(self, size: int | None = -1, /) -> bytes:
        end = len(self._view) if size is None or size < 0 else min(len(self._view), self._at + size)
        data = bytes(self._view[self._at : end])
        self._at = max(self._at, end)
        return data

    def close(self) -> None:
        if not self.closed:
            self._view.release()
        super().close()
