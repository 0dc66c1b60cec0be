//! MPI itself, when acceval is built with the `mpi` feature (rsmpi over the MPI library it
//! was built against: Debian's Open MPI 4.1) and launched by `mpirun`: the barriers of a
//! cluster run and the all-reduce of data-parallel training go through MPI_Barrier and
//! MPI_Allreduce. Without the feature, or under a launcher that is not MPI, the ranks use
//! the TCP rendezvous (`rendezvous`, `collective`).

/// Why MPI is not used by a build without the feature.
pub const NOT_COMPILED: &str = "MPI is not compiled in (cargo feature mpi): build with `cargo build --release --features mpi` on a host with an MPI library and libclang (Debian: libopenmpi-dev libclang-dev)";

#[cfg(feature = "mpi")]
mod imp {
    use mpi::collective::SystemOperation;
    use mpi::topology::SimpleCommunicator;
    use mpi::traits::{Communicator, CommunicatorCollectives};

    /// MPI, initialised once for the process (finalised when dropped).
    pub struct Mpi {
        _universe: mpi::environment::Universe,
        world: SimpleCommunicator,
        scratch: Vec<f32>,
    }

    impl Mpi {
        /// MPI_Init; the world communicator.
        pub fn init() -> Result<Mpi, String> {
            let universe = mpi::initialize()
                .ok_or_else(|| "MPI was initialised already in this process".to_string())?;
            let world = universe.world();
            Ok(Mpi {
                _universe: universe,
                world,
                scratch: Vec::new(),
            })
        }
        pub fn rank(&self) -> usize {
            self.world.rank() as usize
        }
        pub fn size(&self) -> usize {
            self.world.size() as usize
        }
        pub fn barrier(&self) {
            self.world.barrier();
        }
        /// MPI_Allreduce(MPI_SUM) of `buf` in place.
        pub fn all_reduce_sum(&mut self, buf: &mut [f32]) {
            self.scratch.clear();
            self.scratch.extend_from_slice(buf);
            self.world
                .all_reduce_into(&self.scratch[..], buf, SystemOperation::sum());
        }
        /// The MPI library's own version string.
        pub fn library() -> String {
            mpi::environment::library_version()
                .unwrap_or_else(|_| "unknown MPI library".into())
                .lines()
                .next()
                .unwrap_or_default()
                .trim()
                .to_string()
        }
    }
}

#[cfg(not(feature = "mpi"))]
mod imp {
    /// MPI is not in this build: `init` says so.
    pub struct Mpi;

    impl Mpi {
        pub fn init() -> Result<Mpi, String> {
            Err(super::NOT_COMPILED.into())
        }
        pub fn rank(&self) -> usize {
            0
        }
        pub fn size(&self) -> usize {
            1
        }
        pub fn barrier(&self) {}
        pub fn all_reduce_sum(&mut self, _: &mut [f32]) {}
        pub fn library() -> String {
            super::NOT_COMPILED.into()
        }
    }
}

pub use imp::Mpi;

/// Whether `launcher` started this process through MPI (its library can be initialised).
pub fn launched_by_mpi(launcher: super::Launcher) -> bool {
    matches!(
        launcher,
        super::Launcher::OpenMpi | super::Launcher::Mpich | super::Launcher::Pmix
    )
}
