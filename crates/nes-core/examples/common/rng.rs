//! What the examples share: the benchmark's seeded input generator and its actions.

/// SIMPLE_MOVEMENT, the benchmark's action set (protocol B): NOOP, R, R+A, R+B, R+A+B, A, L.
#[allow(dead_code)] // not every crate that shares this module draws SMB's actions
pub const SIMPLE_MOVEMENT: [u8; 7] = [0x00, 0x80, 0x81, 0x82, 0x83, 0x01, 0x40];

/// xorshift32, as the GPU benchmark draws its actions.
pub struct Rng(pub u32);
impl Rng {
    /// Env `i`'s generator, as the GPU benchmarks seed env `i`: seed i + 1.
    #[allow(dead_code)] // not every crate that shares this module seeds envs so
    pub fn for_env(i: usize) -> Rng {
        Rng::seeded(i as u32 + 1)
    }

    /// A generator from any seed, spread so that neighbouring seeds start far apart (and never
    /// at zero, where xorshift stays).
    #[allow(dead_code)]
    pub fn seeded(seed: u32) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9) ^ 0x85eb_ca6b | 1)
    }

    pub fn next(&mut self) -> u32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 17;
        self.0 ^= self.0 << 5;
        self.0
    }
}
