//! The deflate codec (raw deflate, no zlib header).

pub(crate) fn compress_deflate(level: i32, input: &[u8], limit: usize, out: &mut Vec<u8>) -> bool {
    let mut c = flate2::Compress::new(flate2::Compression::new(level as u32), false);
    let mut buf = Vec::with_capacity(limit.min(input.len() + input.len() / 100 + 1024));
    match c.compress_vec(input, &mut buf, flate2::FlushCompress::Finish) {
        Ok(flate2::Status::StreamEnd) if buf.len() < limit => {
            out.extend_from_slice(&buf);
            true
        }
        _ => false,
    }
}
