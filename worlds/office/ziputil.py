"""Deterministic zip writing and capped, defensive zip and XML reading for office files.

Why: office files are zips of XML. ``zipfile`` stamps each member with the local wall-clock time and the host
OS, so the same document would give different bytes on every save; here every member gets a fixed date
(1980-01-01), fixed permissions and a fixed "created by Unix" marker, so the same content always gives the
same bytes (and the same blob hash). Reading never trusts the file: member count and uncompressed size are
capped before anything is inflated (zip bombs), XML with a DOCTYPE is refused (entity expansion), and nothing
is ever extracted to disk.
"""

from __future__ import annotations

import io
import zipfile
from xml.etree import ElementTree as ET  # noqa: S405 - DOCTYPE refused before parsing, see parse_xml

from worlds.office.errors import CorruptFile, FileTooLarge

FIXED_DATE = (1980, 1, 1, 0, 0, 0)
MAX_MEMBERS = 500
MAX_UNZIPPED = 64 * 1024 * 1024
"""Cap on the total uncompressed size of an office file (64 MiB)."""


def write_zip(members: list[tuple[str, bytes, bool]]) -> bytes:
    """A zip of ``(name, data, compress)`` members in the given order, byte-for-byte reproducible."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data, compress in members:
            info = zipfile.ZipInfo(name, date_time=FIXED_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
            info.create_system = 3
            info.external_attr = 0o644 << 16
            zf.writestr(info, data, compress_type=info.compress_type, compresslevel=6 if compress else None)
    return buf.getvalue()


class SafeZip:
    """Members of a zip read with caps.

    Args:
        data: The file bytes.

    Raises:
        CorruptFile: not a zip.
        FileTooLarge: too many members or too large once inflated.
    """

    def __init__(self, data: bytes) -> None:
        try:
            self.zf = zipfile.ZipFile(io.BytesIO(data))
            infos = self.zf.infolist()
        except (zipfile.BadZipFile, ValueError, OSError, EOFError) as exc:
            raise CorruptFile(f"expected a zip container (an office file); the bytes are not one ({exc})") from None
        if len(infos) > MAX_MEMBERS:
            raise FileTooLarge(f"the file has {len(infos)} parts; the limit is {MAX_MEMBERS}")
        total = sum(i.file_size for i in infos)
        if total > MAX_UNZIPPED:
            raise FileTooLarge(f"the file inflates to {total} bytes; the limit is {MAX_UNZIPPED}")
        self.names = {i.filename for i in infos}

    def read(self, name: str, *, required: bool = True) -> bytes | None:
        """A member's bytes (None when absent and not ``required``).

        Raises:
            CorruptFile: a required member is missing or fails its CRC.
        """
        if name not in self.names:
            if required:
                raise CorruptFile(f"expected a part {name!r} in the file; it is missing")
            return None
        try:
            with self.zf.open(name) as fh:
                data = fh.read(MAX_UNZIPPED + 1)
        except (zipfile.BadZipFile, ValueError, OSError, EOFError, NotImplementedError) as exc:
            raise CorruptFile(f"part {name!r} of the file cannot be read ({exc})") from None
        if len(data) > MAX_UNZIPPED:
            raise FileTooLarge(f"part {name!r} inflates beyond {MAX_UNZIPPED} bytes")
        return data


def parse_xml(data: bytes, what: str) -> ET.Element:
    """Parse an XML part, refusing DOCTYPE declarations (entity expansion), non-UTF-8 parts and malformed XML.

    Office parts are UTF-8; refusing UTF-16/32 up front keeps the byte-level DOCTYPE check meaningful (a UTF-16
    ``<!ENTITY`` would not match it).

    Raises:
        CorruptFile: malformed XML, a DOCTYPE, or a part that is not UTF-8.
    """
    if data[:2] in (b"\xff\xfe", b"\xfe\xff") or b"\x00" in data[:4]:
        raise CorruptFile(f"{what} is not UTF-8 XML; refused")
    upper = data.upper()
    if b"<!DOCTYPE" in upper or b"<!ENTITY" in upper:
        raise CorruptFile(f"{what} declares a DOCTYPE or entities; refused")
    try:
        return ET.fromstring(data)  # noqa: S314 - no DOCTYPE, so no entity expansion or external fetch
    except ET.ParseError as exc:
        raise CorruptFile(f"{what} is not well-formed XML ({exc})") from None
