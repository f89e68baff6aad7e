//! What the examples share: the benchmark's seeded input generator.

/// xorshift32, as the GPU benchmark draws its actions.
pub struct Rng(pub u32);
impl Rng {
    pub fn next(&mut self) -> u32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 17;
        self.0 ^= self.0 << 5;
        self.0
    }
}
