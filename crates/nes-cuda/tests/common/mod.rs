//! What the kernel tests share.

/// xorshift32: a tiny seeded RNG, identical on every platform (the GPU benchmark draws its
/// actions with the same).
pub struct Rng(pub u32);
impl Rng {
    pub fn next(&mut self) -> u32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 17;
        self.0 ^= self.0 << 5;
        self.0
    }
}
