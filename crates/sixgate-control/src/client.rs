//! The API's client, for the command line: HTTP/1.1 over the Unix socket with
//! the standard library alone (one request per connection, blocking), reading
//! streamed answers as they come.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::api::types::ApiError;

/// A connection target: the daemon's API socket.
#[derive(Clone, Debug)]
pub struct Client {
    socket: PathBuf,
}

/// An answer's body, de-chunked, as it arrives.
pub type BodyReader = BufReader<Box<dyn Read>>;

impl Client {
    /// Talk to the daemon at `socket`.
    pub fn new(socket: &Path) -> Client {
        Client {
            socket: socket.to_owned(),
        }
    }

    /// `GET path`, the answer as `T`.
    pub fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, String> {
        let body = self.request("GET", path, None)?;
        parse(body)
    }

    /// `POST path` with `req` as JSON, the answer as `T`.
    pub fn post<B: Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        req: &B,
    ) -> Result<T, String> {
        let json = serde_json::to_vec(req).map_err(|e| e.to_string())?;
        let body = self.request("POST", path, Some(&json))?;
        parse(body)
    }

    /// `GET path` answered with one JSON object per line: each, as it comes.
    pub fn lines<T: DeserializeOwned>(
        &self,
        path: &str,
        mut f: impl FnMut(T) -> Result<(), String>,
    ) -> Result<(), String> {
        let mut body = self.request("GET", path, None)?;
        let mut line = String::new();
        loop {
            line.clear();
            let n = body
                .read_line(&mut line)
                .map_err(|e| format!("the daemon's answer broke off: {e}"))?;
            if n == 0 {
                return Ok(());
            }
            if line.trim().is_empty() {
                continue;
            }
            f(serde_json::from_str(&line).map_err(|e| format!("bad answer line: {e}"))?)?;
        }
    }

    /// Send one request; the body of a 2xx answer, or the daemon's error.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<&[u8]>,
    ) -> Result<BodyReader, String> {
        let mut s = UnixStream::connect(&self.socket).map_err(|e| {
            format!(
                "cannot reach the sixgate daemon at {}: {e} (is `sixgate run` running? \
                 see --socket, --config or SIXGATE_SOCKET)",
                self.socket.display()
            )
        })?;
        let body = body.unwrap_or_default();
        let mut req = format!(
            "{method} {path} HTTP/1.1\r\nHost: sixgate\r\nConnection: close\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        req.extend_from_slice(body);
        // The daemon may answer (and close) before it read a body it does not
        // need: its answer counts, not the failed write.
        let sent = s.write_all(&req);
        let mut r = BufReader::new(s);
        let (code, chunked, length) = read_head(&mut r).map_err(|e| match &sent {
            Err(w) => format!("cannot send to the daemon: {w}"),
            Ok(()) => format!("bad answer: {e}"),
        })?;
        let raw: Box<dyn Read> = if chunked {
            Box::new(Chunked {
                r,
                left: 0,
                done: false,
            })
        } else if let Some(n) = length {
            Box::new(r.take(n))
        } else {
            Box::new(r)
        };
        let mut body = BufReader::new(raw);
        if !(200..300).contains(&code) {
            let mut text = String::new();
            let _ = body.read_to_string(&mut text);
            let msg = serde_json::from_str::<ApiError>(&text)
                .map(|e| e.error)
                .unwrap_or_else(|_| format!("HTTP {code}: {}", text.trim()));
            return Err(msg);
        }
        Ok(body)
    }
}

fn parse<T: DeserializeOwned>(mut body: BodyReader) -> Result<T, String> {
    let mut text = String::new();
    body.read_to_string(&mut text)
        .map_err(|e| format!("the daemon's answer broke off: {e}"))?;
    serde_json::from_str(&text).map_err(|e| format!("bad answer from the daemon: {e}"))
}

/// Status code, chunked or not, Content-Length.
fn read_head(r: &mut impl BufRead) -> io::Result<(u16, bool, Option<u64>)> {
    let mut line = String::new();
    r.read_line(&mut line)?;
    let code = line
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| io::Error::other(format!("not an HTTP status line: {line:?}")))?;
    let (mut chunked, mut length) = (false, None);
    loop {
        line.clear();
        if r.read_line(&mut line)? == 0 || line.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            let (k, v) = (k.trim().to_ascii_lowercase(), v.trim());
            if k == "transfer-encoding" && v.eq_ignore_ascii_case("chunked") {
                chunked = true;
            } else if k == "content-length" {
                length = v.parse().ok();
            }
        }
    }
    Ok((code, chunked, length))
}

/// HTTP/1.1 chunked transfer coding, decoded.
struct Chunked<R> {
    r: R,
    left: u64,
    done: bool,
}

impl<R: BufRead> Read for Chunked<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.done || buf.is_empty() {
            return Ok(0);
        }
        if self.left == 0 {
            let mut line = String::new();
            self.r.read_line(&mut line)?;
            let size = line.trim().split(';').next().unwrap_or("");
            self.left = u64::from_str_radix(size, 16)
                .map_err(|_| io::Error::other(format!("bad chunk size {line:?}")))?;
            if self.left == 0 {
                self.done = true;
                return Ok(0);
            }
        }
        let want = buf.len().min(self.left as usize);
        let n = self.r.read(&mut buf[..want])?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        self.left -= n as u64;
        if self.left == 0 {
            let mut crlf = String::new();
            self.r.read_line(&mut crlf)?;
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunked_bodies_are_decoded() {
        let wire = b"5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n";
        let mut c = Chunked {
            r: &wire[..],
            left: 0,
            done: false,
        };
        let mut s = String::new();
        c.read_to_string(&mut s).unwrap();
        assert_eq!(s, "hello, world");
    }

    #[test]
    fn status_line_and_headers() {
        let wire = b"HTTP/1.1 409 Conflict\r\ncontent-type: application/json\r\ncontent-length: 12\r\n\r\n";
        let (code, chunked, len) = read_head(&mut &wire[..]).unwrap();
        assert_eq!((code, chunked, len), (409, false, Some(12)));
    }
}
