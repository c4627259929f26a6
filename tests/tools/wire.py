"""wire.py - drive one line-protocol scenario against a c1m server and print
what happened. Used by the bats suites; every scenario is bounded in time.

usage: wire.py SCENARIO PORT [HOST]
  split      "pi" then "ng\\n" in two writes          -> prints: pong
  multi      "ping\\nhello\\nping\\n" in one write       -> prints: pong pong
  exact      a 1024-byte line then ping               -> prints: pong
  oversized  a 1025-byte line                         -> prints: closed
  noread     pings without ever reading, until closed -> prints: closed
"""
import socket
import sys
import time


def connect(host, port):
    s = socket.create_connection((host, port), timeout=5)
    s.settimeout(5)
    return s


def read_replies(s, want):
    buf = b""
    deadline = time.monotonic() + 5
    while buf.count(b"\n") < want and time.monotonic() < deadline:
        chunk = s.recv(4096)
        if not chunk:
            break
        buf += chunk
    return buf.decode().split()


def wait_closed(s, seconds=5):
    """True once the server closed the connection (EOF or reset)."""
    s.settimeout(0.2)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if s.recv(65536) == b"":
                return True
        except socket.timeout:
            continue
        except ConnectionResetError:
            return True
    return False


def main():
    scenario, port = sys.argv[1], int(sys.argv[2])
    host = sys.argv[3] if len(sys.argv) > 3 else "127.0.0.1"
    s = connect(host, port)
    if scenario == "split":
        s.sendall(b"pi")
        time.sleep(0.1)
        s.sendall(b"ng\n")
        print(" ".join(read_replies(s, 1)))
    elif scenario == "multi":
        s.sendall(b"ping\nhello\nping\n")
        print(" ".join(read_replies(s, 2)))
    elif scenario == "exact":
        s.sendall(b"a" * 1024 + b"\n")
        s.sendall(b"ping\n")
        print(" ".join(read_replies(s, 1)))
    elif scenario == "oversized":
        s.sendall(b"a" * 1025)
        print("closed" if wait_closed(s) else "open")
    elif scenario == "noread":
        # A tiny receive buffer so the server's replies back up quickly.
        s.close()
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
        s.connect((host, port))
        s.settimeout(0.05)
        batch = b"ping\n" * 2000
        deadline = time.monotonic() + 10
        closed = False
        while time.monotonic() < deadline and not closed:
            try:
                s.send(batch)
            except socket.timeout:
                pass
            except (BrokenPipeError, ConnectionResetError):
                closed = True
        print("closed" if closed or wait_closed(s, 1) else "open")
    else:
        sys.exit(f"unknown scenario {scenario}")


if __name__ == "__main__":
    main()
