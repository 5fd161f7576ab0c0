"""torch.utils.file_baton: a lock held by creating a file (the first process to create it
does the work, the others wait for the file to go). Example::

    baton = FileBaton("build.lock")
    if baton.try_acquire():
        try:
            build()
        finally:
            baton.release()
    else:
        baton.wait()
"""
import os
import time
import warnings

__all__ = ["FileBaton"]


class FileBaton:
    """A primitive, file-based synchronization utility."""

    def __init__(self, lock_file_path, wait_seconds=0.1, warn_after_seconds=None):
        self.lock_file_path = lock_file_path
        self.wait_seconds = wait_seconds
        self.fd = None
        self.warn_after_seconds = warn_after_seconds

    def try_acquire(self):
        """True if this call created the lock file (and so holds the baton)."""
        try:
            self.fd = os.open(self.lock_file_path, os.O_CREAT | os.O_EXCL)
            return True
        except FileExistsError:
            return False

    def wait(self):
        """Sleep until the lock file is gone (the holder released it)."""
        start = time.time()
        while os.path.exists(self.lock_file_path):
            time.sleep(self.wait_seconds)
            if self.warn_after_seconds is not None and \
                    time.time() - start > self.warn_after_seconds:
                warnings.warn(f'Waited on lock file "{self.lock_file_path}" for '
                              f"{self.warn_after_seconds} seconds.", stacklevel=2)
                start = time.time()

    def release(self):
        """Close and delete the lock file."""
        if self.fd is not None:
            os.close(self.fd)
        os.remove(self.lock_file_path)
