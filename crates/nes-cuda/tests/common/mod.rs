//! What the kernel tests share: the seeded input generator of nes-core's examples (the GPU
//! benchmark draws its actions with the same xorshift32).

#[path = "../../../nes-core/examples/common/rng.rs"]
mod rng;
pub use rng::Rng;
