//! Stdin and stdout on tokio's reactor, whatever the client made them.
//!
//! `tokio::io::stdin` and `stdout` do each read and each write on tokio's
//! blocking pool: a turn to another thread and back per message, which on
//! a two-core machine was a third of the proxy's time. So when they can
//! be, stdin and stdout are read and written as what they are, on the
//! reactor, without changing this process's fds 0 and 1 (which other code
//! may use: a `println!` on a non-blocking stdout fails when the client
//! reads slowly):
//!
//! - a pipe (FIFO), as most clients start their servers (Python's, Rust's
//!   and Go's process APIs), is opened again through `/proc/self/fd` on
//!   Linux, which gives a file description of its own to set non-blocking,
//!   so this process's fds 0 and 1 stay as they were;
//! - a stream socket, as clients built on Node.js start them (libuv hands
//!   a child a socket pair for each piped stdio stream), cannot be opened
//!   again: it is duplicated and read and written with `MSG_DONTWAIT`, a
//!   flag of each call rather than of the socket, so the description that
//!   fds 0 and 1 share (with a wrapper that started this process, say)
//!   stays blocking.
//!
//! Anything else (a terminal, which is never opened again so that it
//! cannot become a controlling terminal; a file; a runtime without IO;
//! another system) gets tokio's own stdin and stdout.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use rustix::fs::FileType;
use rustix::net::{RecvFlags, SendFlags, SocketType};
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A reader of this process's stdin.
pub(crate) type StdinReader = Box<dyn AsyncRead + Send + Unpin>;
/// A writer of this process's stdout.
pub(crate) type StdoutWriter = Box<dyn AsyncWrite + Send + Unpin>;

/// Stdin, read without the blocking pool when it is a pipe or a socket.
pub(crate) fn stdin() -> StdinReader {
    let fd = io::stdin();
    match Kind::of(fd.as_fd()) {
        Kind::Pipe => registered(|| {
            tokio::net::unix::pipe::OpenOptions::new().open_receiver("/proc/self/fd/0")
        })
        .map(|pipe| Box::new(pipe) as StdinReader),
        Kind::Socket => StreamSocket::duplicate(fd.as_fd()).map(|socket| Box::new(socket) as _),
        Kind::Other => None,
    }
    .unwrap_or_else(|| Box::new(tokio::io::stdin()))
}

/// Stdout, written without the blocking pool when it is a pipe or a
/// socket.
pub(crate) fn stdout() -> StdoutWriter {
    let fd = io::stdout();
    match Kind::of(fd.as_fd()) {
        Kind::Pipe => {
            registered(|| tokio::net::unix::pipe::OpenOptions::new().open_sender("/proc/self/fd/1"))
                .map(|pipe| Box::new(pipe) as StdoutWriter)
        }
        Kind::Socket => StreamSocket::duplicate(fd.as_fd()).map(|socket| Box::new(socket) as _),
        Kind::Other => None,
    }
    .unwrap_or_else(|| Box::new(tokio::io::stdout()))
}

/// What a standard stream is, as far as reading it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A FIFO, on Linux (where `/proc/self/fd` opens it again).
    Pipe,
    /// A stream socket (a socket pair, a Unix or TCP connection).
    Socket,
    /// Anything else: tokio's stdin and stdout.
    Other,
}

impl Kind {
    fn of(fd: BorrowedFd<'_>) -> Kind {
        let Ok(stat) = rustix::fs::fstat(fd) else {
            return Kind::Other;
        };
        match FileType::from_raw_mode(stat.st_mode) {
            FileType::Fifo if cfg!(target_os = "linux") => Kind::Pipe,
            // A datagram socket has no byte stream to read lines from.
            FileType::Socket if rustix::net::sockopt::socket_type(fd) == Ok(SocketType::STREAM) => {
                Kind::Socket
            }
            _ => Kind::Other,
        }
    }
}

/// `open()`'s value, or `None` when it fails, or panics because the
/// runtime was built without IO (registering with the reactor panics
/// then).
fn registered<T>(open: impl FnOnce() -> io::Result<T>) -> Option<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(open))
        .ok()?
        .ok()
}

/// A duplicate of a stream socket, read with `recv` and written with
/// `send`, each with `MSG_DONTWAIT`, and woken by tokio's reactor.
struct StreamSocket {
    fd: AsyncFd<OwnedFd>,
}

impl StreamSocket {
    fn duplicate(fd: BorrowedFd<'_>) -> Option<StreamSocket> {
        let owned = fd.try_clone_to_owned().ok()?;
        // `AsyncFd::new` is deprecated because a registered value whose
        // descriptor could change or close under the registration makes it
        // unsound; an `OwnedFd` that the `AsyncFd` owns can do neither
        // until it is dropped with it. (Its replacement is `unsafe`, which
        // this workspace forbids.)
        #[allow(deprecated)]
        let registered = registered(|| AsyncFd::new(owned));
        registered.map(|fd| StreamSocket { fd })
    }
}

impl AsyncRead for StreamSocket {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        loop {
            let mut ready = ready!(self.fd.poll_read_ready(cx))?;
            let unfilled = buf.initialize_unfilled();
            let received = ready.try_io(|fd| {
                rustix::net::recv(fd.get_ref(), &mut *unfilled, RecvFlags::DONTWAIT)
                    .map(|(read, _)| read)
                    .map_err(io::Error::from)
            });
            match received {
                Ok(Ok(read)) => {
                    buf.advance(read);
                    return Poll::Ready(Ok(()));
                }
                Ok(Err(error)) => return Poll::Ready(Err(error)),
                // Would have blocked: readiness was cleared; wait again.
                Err(_would_block) => {}
            }
        }
    }
}

impl AsyncWrite for StreamSocket {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bytes: &[u8],
    ) -> Poll<io::Result<usize>> {
        loop {
            let mut ready = ready!(self.fd.poll_write_ready(cx))?;
            // NOSIGNAL: a client that has gone is an error to return, not
            // a SIGPIPE.
            let flags = SendFlags::DONTWAIT | SendFlags::NOSIGNAL;
            let sent = ready.try_io(|fd| {
                rustix::net::send(fd.get_ref(), bytes, flags).map_err(io::Error::from)
            });
            if let Ok(result) = sent {
                return Poll::Ready(result);
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Nothing is buffered here: a send is in the socket when it returns.
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Fd 1 stays open (this is a duplicate), as with tokio's stdout:
        // the client sees the end when the process ends.
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::net::UnixStream;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    #[test]
    fn each_kind_of_descriptor_is_told_apart() {
        let (stream, _peer) = UnixStream::pair().expect("a socket pair");
        assert_eq!(Kind::of(stream.as_fd()), Kind::Socket);
        let (datagram, _peer) = std::os::unix::net::UnixDatagram::pair().expect("a datagram pair");
        assert_eq!(Kind::of(datagram.as_fd()), Kind::Other);
        let file = std::fs::File::open("/proc/self/status").expect("a file");
        assert_eq!(Kind::of(file.as_fd()), Kind::Other);
        let (reader, _writer) = std::io::pipe().expect("a pipe");
        let expected = if cfg!(target_os = "linux") {
            Kind::Pipe
        } else {
            Kind::Other
        };
        assert_eq!(Kind::of(reader.as_fd()), expected);
    }

    /// Lines cross a socket pair both ways through the duplicate, writes
    /// larger than the socket holds wait for the reader, and the original
    /// descriptor stays blocking (a `println!` on it still works however
    /// slowly the client reads).
    #[tokio::test]
    async fn a_socket_is_read_and_written_without_making_it_non_blocking() {
        let (ours, theirs) = UnixStream::pair().expect("a socket pair");
        let mut socket = StreamSocket::duplicate(ours.as_fd()).expect("registered");
        theirs.set_nonblocking(true).expect("the peer's end");
        let mut theirs = tokio::net::UnixStream::from_std(theirs).expect("registered");

        theirs.write_all(b"{\"id\":1}\n").await.expect("written");
        let mut line = [0_u8; 9];
        socket.read_exact(&mut line).await.expect("read");
        assert_eq!(&line, b"{\"id\":1}\n");

        // More than a socket buffer holds: the writes wait for the reader
        // instead of failing.
        let big = vec![b'x'; 4 << 20];
        let writer = tokio::spawn(async move {
            socket.write_all(&big).await.expect("all written");
            socket
        });
        let mut received = vec![0_u8; 4 << 20];
        theirs.read_exact(&mut received).await.expect("all read");
        assert!(received.iter().all(|&byte| byte == b'x'));
        drop(writer.await.expect("the writer ends"));

        let flags = rustix::fs::fcntl_getfl(&ours).expect("the flags");
        assert!(!flags.contains(rustix::fs::OFlags::NONBLOCK));
    }

    /// A peer that closes its end is the end of the input, not an error.
    #[tokio::test]
    async fn a_closed_peer_reads_as_the_end() {
        let (ours, theirs) = UnixStream::pair().expect("a socket pair");
        let mut socket = StreamSocket::duplicate(ours.as_fd()).expect("registered");
        drop(theirs);
        let mut rest = Vec::new();
        let read = socket.read_to_end(&mut rest).await.expect("the end");
        assert_eq!(read, 0);
    }
}
