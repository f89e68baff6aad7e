//! Save states: a small hand-rolled, versioned binary format.
//!
//! A state is `header | body | checksum`. The header carries a magic, the format version, the
//! body length and a hash of the ROM; the body is every chip's fields in a fixed order, written
//! little-endian by [`Snapshot`] implementations; the trailer is an FNV-1a checksum of everything
//! before it. Loading validates all of that *before* touching the console, so a bad blob is an
//! error that leaves the console as it was.

/// Why a state blob was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateError {
    /// Shorter than a header, or shorter than its header says.
    Truncated { needed: usize, got: usize },
    /// Does not start with the nesle state magic.
    BadMagic,
    /// Written by another version of the format.
    Version { found: u32, expected: u32 },
    /// Taken from another ROM.
    OtherRom { found: u64, expected: u64 },
    /// The checksum does not match: the blob was corrupted.
    Checksum,
    /// A field holds a value the console can never be in (e.g. an unknown enum tag).
    BadField(&'static str),
    /// The caller's buffer cannot hold the state.
    BufferTooSmall { needed: usize, got: usize },
}

impl core::fmt::Display for StateError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            StateError::Truncated { needed, got } => {
                write!(f, "save state truncated: needs {needed} bytes, got {got}")
            }
            StateError::BadMagic => write!(f, "not a nesle save state (bad magic)"),
            StateError::Version { found, expected } => {
                write!(f, "save state version {found} is not supported (expected {expected})")
            }
            StateError::OtherRom { found, expected } => {
                write!(f, "save state belongs to another ROM (hash {found:016x}, this ROM is {expected:016x})")
            }
            StateError::Checksum => write!(f, "save state checksum mismatch (corrupted)"),
            StateError::BadField(name) => write!(f, "save state field `{name}` holds an impossible value"),
            StateError::BufferTooSmall { needed, got } => {
                write!(f, "buffer too small for save state: needs {needed} bytes, got {got}")
            }
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for StateError {}

/// FNV-1a, 64 bit: small, no_std, good enough to detect corruption and tell ROMs apart.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Writes fields into a caller's buffer. Writing past the end only counts bytes, so a first
/// pass with an empty buffer measures the state size.
#[derive(Debug)]
pub struct StateWriter<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl<'a> StateWriter<'a> {
    pub fn new(buf: &'a mut [u8]) -> Self {
        StateWriter { buf, pos: 0 }
    }
    pub fn len(&self) -> usize {
        self.pos
    }
    pub fn is_empty(&self) -> bool {
        self.pos == 0
    }
    pub fn bytes(&mut self, v: &[u8]) {
        let end = self.pos + v.len();
        if end <= self.buf.len() {
            self.buf[self.pos..end].copy_from_slice(v);
        }
        self.pos = end;
    }
    pub fn u8(&mut self, v: u8) {
        self.bytes(&[v]);
    }
    pub fn bool(&mut self, v: bool) {
        self.u8(v as u8);
    }
    pub fn u16(&mut self, v: u16) {
        self.bytes(&v.to_le_bytes());
    }
    pub fn u32(&mut self, v: u32) {
        self.bytes(&v.to_le_bytes());
    }
    pub fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }
    pub fn i32(&mut self, v: i32) {
        self.bytes(&v.to_le_bytes());
    }
}

/// Reads fields back in the order they were written.
#[derive(Debug)]
pub struct StateReader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> StateReader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        StateReader { buf, pos: 0 }
    }
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }
    pub fn bytes(&mut self, out: &mut [u8]) -> Result<(), StateError> {
        let end = self.pos + out.len();
        if end > self.buf.len() {
            return Err(StateError::Truncated { needed: end, got: self.buf.len() });
        }
        out.copy_from_slice(&self.buf[self.pos..end]);
        self.pos = end;
        Ok(())
    }
    pub fn u8(&mut self) -> Result<u8, StateError> {
        let mut b = [0u8; 1];
        self.bytes(&mut b)?;
        Ok(b[0])
    }
    pub fn bool(&mut self) -> Result<bool, StateError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(StateError::BadField("bool")),
        }
    }
    pub fn u16(&mut self) -> Result<u16, StateError> {
        let mut b = [0u8; 2];
        self.bytes(&mut b)?;
        Ok(u16::from_le_bytes(b))
    }
    pub fn u32(&mut self) -> Result<u32, StateError> {
        let mut b = [0u8; 4];
        self.bytes(&mut b)?;
        Ok(u32::from_le_bytes(b))
    }
    pub fn u64(&mut self) -> Result<u64, StateError> {
        let mut b = [0u8; 8];
        self.bytes(&mut b)?;
        Ok(u64::from_le_bytes(b))
    }
    pub fn i32(&mut self) -> Result<i32, StateError> {
        let mut b = [0u8; 4];
        self.bytes(&mut b)?;
        Ok(i32::from_le_bytes(b))
    }
}

/// A chip whose whole observable state can be saved and restored.
///
/// `load` may leave `self` half-written on error; the console therefore loads into a scratch
/// copy and swaps it in only when every chip loaded.
pub trait Snapshot {
    fn save(&self, w: &mut StateWriter<'_>);
    fn load(&mut self, r: &mut StateReader<'_>) -> Result<(), StateError>;
}
