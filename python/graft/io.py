"""NumPy's .npy / .npz files, read and written by graft's C++ core (atomic writes; np.load reads them,
and graft reads np.save / np.savez / np.savez_compressed files)."""
from . import _graft


def save_npy(path, x):
    _graft.save_npy(str(path), x)


def load_npy(path):
    return _graft.load_npy(str(path))


def save_npz(path, **arrays):
    _graft.save_npz(str(path), arrays)


def load_npz(path):
    return _graft.load_npz(str(path))
