"""A Docker engine behind TLS with client certificates: a local TLS proxy in front of the engine's
unix socket, with a throwaway CA, a server certificate for 127.0.0.1 and a client certificate laid
out as DOCKER_CERT_PATH expects (``ca.pem``, ``cert.pem``, ``key.pem``). For real ``tcp://`` + TLS
tests; only a client with the client certificate gets through.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ENGINE_SOCKET = "/var/run/docker.sock"


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def make_certificates(folder: Path) -> Path:
    """A CA, a server certificate for 127.0.0.1 and a client certificate; returns the client folder."""
    folder.mkdir(parents=True, exist_ok=True)
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    _openssl("req", "-x509", *ec, "-keyout", str(folder / "ca-key.pem"), "-out", str(folder / "ca.pem"),
             "-subj", "/CN=llm-dyno test CA", "-days", "1")  # fmt: skip
    for name, subject, usage in (
        ("server", "/CN=127.0.0.1", "serverAuth"),
        ("client", "/CN=client", "clientAuth"),
    ):
        ext = folder / f"{name}.ext"
        ext.write_text(
            ("subjectAltName=IP:127.0.0.1\n" if name == "server" else "") + f"extendedKeyUsage={usage}\n"
        )
        _openssl("req", *ec, "-keyout", str(folder / f"{name}-key.pem"), "-out", str(folder / f"{name}.csr"),
                 "-subj", subject)  # fmt: skip
        _openssl("x509", "-req", "-in", str(folder / f"{name}.csr"), "-CA", str(folder / "ca.pem"),
                 "-CAkey", str(folder / "ca-key.pem"), "-CAcreateserial", "-days", "1",
                 "-out", str(folder / f"{name}-cert.pem"), "-extfile", str(ext))  # fmt: skip
    client = folder / "client"
    client.mkdir(exist_ok=True)
    for src, dst in (("ca.pem", "ca.pem"), ("client-cert.pem", "cert.pem"), ("client-key.pem", "key.pem")):
        (client / dst).write_bytes((folder / src).read_bytes())
    return client


def _pump(src: socket.socket, dst: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := src.recv(65536):
            dst.sendall(data)
    with contextlib.suppress(OSError):
        dst.shutdown(socket.SHUT_WR)


@contextmanager
def tls_engine(folder: Path) -> Iterator[tuple[str, Path]]:
    """Serve the local engine over TLS on 127.0.0.1 until the block ends; yields ``tcp://…`` and the
    client certificate folder."""
    client_dir = make_certificates(folder)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(folder / "ca.pem"))
    context.load_cert_chain(str(folder / "server-cert.pem"), str(folder / "server-key.pem"))
    context.verify_mode = ssl.CERT_REQUIRED  # no client certificate, no engine
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    port = listener.getsockname()[1]
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                raw, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=handle, args=(raw,), daemon=True).start()

    def handle(raw: socket.socket) -> None:
        try:
            conn = context.wrap_socket(raw, server_side=True)
        except (ssl.SSLError, OSError):
            raw.close()
            return
        engine = socket.socket(socket.AF_UNIX)
        engine.connect(ENGINE_SOCKET)
        back = threading.Thread(target=_pump, args=(engine, conn), daemon=True)
        back.start()
        _pump(conn, engine)
        back.join(30)
        conn.close()
        engine.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"tcp://127.0.0.1:{port}", client_dir
    finally:
        stop.set()
        listener.close()
