//! An incremental Server-Sent Events parser (the WHATWG `text/event-stream` format, as LLM
//! servers use it): bytes arrive in arbitrary pieces; an event ends at a blank line; `data:`
//! lines of one event are joined with `\n`; lines starting with `:` are comments (keep-alive
//! pings) and ignored; `\r\n`, `\n` and `\r` all end lines.
//!
//! Written here rather than taken from a crate: the SSE crates on crates.io wrap a whole HTTP
//! client (reqwest-eventsource, eventsource-client) or target browsers; the load generator
//! needs only this state machine over the frames hyper already delivers, with the time of
//! arrival of each event kept by the caller.

/// Splits a byte stream into the `data` payloads of its events.
#[derive(Debug)]
pub struct Parser {
    line: Vec<u8>,
    data: Vec<u8>,
    has_data: bool,
    /// The last byte fed was a `\r` (a following `\n` belongs to the same line end).
    after_cr: bool,
    /// The longest line, and the largest event data, buffered, bytes.
    limit: usize,
}

/// A line or an event over the parser's limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("an SSE line or event is over {limit} bytes")]
pub struct TooLarge {
    pub limit: usize,
}

impl Default for Parser {
    fn default() -> Parser {
        Parser::with_limit(usize::MAX)
    }
}

impl Parser {
    /// A parser without a limit (for trusted input).
    pub fn new() -> Parser {
        Parser::default()
    }

    /// A parser that buffers at most `limit` bytes of one line or one event's data.
    pub fn with_limit(limit: usize) -> Parser {
        Parser {
            line: Vec::new(),
            data: Vec::new(),
            has_data: false,
            after_cr: false,
            limit,
        }
    }

    /// Feeds `bytes`; calls `on_event` with the data of every event completed by them.
    /// Fails (and should not be fed again) once a line or an event passes the limit.
    pub fn feed(&mut self, bytes: &[u8], mut on_event: impl FnMut(&[u8])) -> Result<(), TooLarge> {
        let too_large = TooLarge { limit: self.limit };
        for &b in bytes {
            if self.after_cr {
                self.after_cr = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\n' | b'\r' => {
                    self.after_cr = b == b'\r';
                    self.end_line(&mut on_event);
                    if self.data.len() > self.limit {
                        return Err(too_large);
                    }
                }
                _ => {
                    if self.line.len() >= self.limit {
                        return Err(too_large);
                    }
                    self.line.push(b)
                }
            }
        }
        Ok(())
    }

    /// Data of an event the stream ended in the middle of (no blank line after it).
    pub fn finish(&mut self) -> Option<Vec<u8>> {
        if !self.line.is_empty() {
            let mut dummy = |_: &[u8]| {};
            self.end_line(&mut dummy);
        }
        if self.has_data {
            self.has_data = false;
            Some(std::mem::take(&mut self.data))
        } else {
            None
        }
    }

    fn end_line(&mut self, on_event: &mut impl FnMut(&[u8])) {
        if self.line.is_empty() {
            if self.has_data {
                on_event(&self.data);
                self.data.clear();
                self.has_data = false;
            }
            return;
        }
        let line = std::mem::take(&mut self.line);
        if line[0] != b':' {
            let (field, value) = match line.iter().position(|&c| c == b':') {
                Some(i) => {
                    let v = &line[i + 1..];
                    (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
                }
                None => (&line[..], &[][..]),
            };
            if field == b"data" {
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
        }
        self.line = line;
        self.line.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(pieces: &[&[u8]]) -> Vec<String> {
        let mut p = Parser::new();
        let mut out = Vec::new();
        for piece in pieces {
            p.feed(piece, |d| out.push(String::from_utf8_lossy(d).into_owned()))
                .unwrap();
        }
        out
    }

    #[test]
    fn splits_joins_and_ignores_comments() {
        let whole = b": ping - 2026\r\n\r\ndata: {\"a\":1}\n\ndata: x\ndata: y\n\nevent: e\ndata:[DONE]\r\n\r\n";
        let want = vec!["{\"a\":1}", "x\ny", "[DONE]"];
        assert_eq!(events(&[whole]), want);
        // Every split point gives the same events.
        for cut in 0..whole.len() {
            assert_eq!(
                events(&[&whole[..cut], &whole[cut..]]),
                want,
                "cut at {cut}"
            );
        }
        let bytes: Vec<&[u8]> = whole.chunks(1).collect();
        assert_eq!(events(&bytes), want);
    }

    #[test]
    fn an_unterminated_event_is_returned_by_finish() {
        let mut p = Parser::new();
        let mut n = 0;
        p.feed(b"data: {\"x\":1}\n\ndata: cut", |_| n += 1).unwrap();
        assert_eq!(n, 1);
        assert_eq!(p.finish().as_deref(), Some(&b"cut"[..]));
        assert_eq!(p.finish(), None);
    }

    #[test]
    fn a_line_or_an_event_over_the_limit_fails() {
        let mut p = Parser::with_limit(8);
        let mut n = 0;
        assert!(p.feed(b"data: 12\n\n", |_| n += 1).is_ok());
        assert_eq!(n, 1);
        let long = [b'x'; 100];
        assert_eq!(
            p.feed(&long, |_| n += 1),
            Err(TooLarge { limit: 8 }),
            "a line that never ends"
        );
        // Many short data lines of one event add up.
        let mut p = Parser::with_limit(8);
        assert_eq!(
            p.feed(b"data: 1234\ndata: 5678\n", |_| n += 1),
            Err(TooLarge { limit: 8 })
        );
        assert_eq!(n, 1);
    }
}
