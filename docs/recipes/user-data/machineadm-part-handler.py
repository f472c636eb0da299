#part-handler
# cloud-init part handler for machineadm: claims the MachineConfig part of multipart user data
# (text/x-machineadm-config, a type `cloud-init devel make-mime` can write and cloud-init's parser
# keeps) and writes it to /etc/machineadm/config.d/, where a plain `machineadm init` reads it.
# cloud-init runs part handlers while it consumes user data (its init stage), before the final
# stage runs runcmd, so the file is in place when machineadm starts.
#
# Each part becomes user-data-NN.yaml (mode 0600, written whole through a rename, so machineadm never
# reads half a file); files of an earlier boot's user data that this one no longer carries are
# removed. Nothing outside /etc/machineadm/config.d/ is touched. MACHINEADM_ROOT (default /)
# prefixes the path, for tests against a scratch root.
import gzip
import io
import logging
import os
import re
import tempfile
import zlib

handler_version = 2

CONTENT_TYPE = "text/x-machineadm-config"
LOG = logging.getLogger("cloudinit.handlers.machineadm")
NAME = re.compile(r"^user-data-\d+\.yaml$")
# machineadm reads no source larger than this (after gzip); neither does the handler write one.
MAX_BYTES = 8 * 1024 * 1024

_written = []
_bodies = []


def list_types():
    return [CONTENT_TYPE]


def _config_dir():
    root = os.environ.get("MACHINEADM_ROOT", "/")
    return os.path.join(root, "etc/machineadm/config.d")


def _write(directory, name, body):
    os.makedirs(directory, mode=0o755, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + name + ".")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(body)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, os.path.join(directory, name))
    except BaseException:
        os.unlink(tmp)
        raise


def _bytes_of(payload):
    # cloud-init hands a text/* part over as str decoded from its bytes with "surrogateescape"
    # (util.fully_decoded_payload), so bytes that are not UTF-8 (a gzip part) come back whole the
    # same way; a strict encode would raise on them.
    if isinstance(payload, str):
        return payload.encode("utf-8", "surrogateescape")
    return payload or b""


def _gunzip(body):
    with gzip.GzipFile(fileobj=io.BytesIO(body)) as f:
        out = f.read(MAX_BYTES + 1)
    if len(out) > MAX_BYTES:
        raise ValueError("it expands beyond %d bytes" % MAX_BYTES)
    return out


def handle_part(data, ctype, filename, payload, frequency=None):
    directory = _config_dir()
    if ctype == "__begin__":
        _written.clear()
        _bodies.clear()
        return
    if ctype == "__end__":
        if os.path.isdir(directory):
            for stale in sorted(os.listdir(directory)):
                if NAME.match(stale) and stale not in _written:
                    os.unlink(os.path.join(directory, stale))
        return
    body = _bytes_of(payload)
    if body[:2] == b"\x1f\x8b":
        try:
            body = _gunzip(body)
        except (OSError, EOFError, zlib.error, ValueError) as error:
            # Raised, cloud-init logs "Failed calling handler" and boots on: say what is wrong.
            LOG.warning(
                "machineadm part %s is gzip that cannot be read (%s): compress it again with "
                "gzip; nothing written to %s", filename, error, directory)
            return
    if not body.strip():
        # Python's email parser (and so cloud-init) reads a part with no blank line after its
        # headers as headers with an empty body; machineadm reading the same user data itself
        # would take the YAML. Say so rather than write an empty configuration.
        LOG.warning(
            "machineadm part %s has an empty body: put a blank line between its headers and the "
            "MachineConfig; nothing written to %s", filename, directory)
        return
    if body in _bodies:
        # cloud-init 22.4 hands the parts inside a message/rfc822 part over twice (once inside
        # it, once copied out); the same MachineConfig merged twice is the same, so once is enough.
        LOG.debug("machineadm part %s repeats one already written", filename)
        return
    name = "user-data-%02d.yaml" % (len(_written) + 1)
    _write(directory, name, body)
    _written.append(name)
    _bodies.append(body)
    LOG.info("machineadm part %s written to %s", filename, os.path.join(directory, name))
