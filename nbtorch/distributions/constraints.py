"""Constraints: the region where a distribution's parameter or sample is valid.

``constraint.check(value)`` returns a bool tensor over the batch (event dims are
reduced with all()). Distributions list theirs in ``arg_constraints`` and
``support``; `biject_to`/`transform_to` (constraint_registry.py) map the real
line onto each. Names and reprs follow torch.distributions.constraints.
"""

__all__ = ["Constraint", "boolean", "cat", "corr_cholesky", "dependent", "dependent_property",
           "greater_than", "greater_than_eq", "independent", "integer_interval", "interval",
           "half_open_interval", "is_dependent", "less_than", "lower_cholesky",
           "lower_triangular", "MixtureSameFamilyConstraint", "multinomial", "nonnegative",
           "nonnegative_integer", "one_hot", "positive", "positive_semidefinite",
           "positive_definite", "positive_integer", "real", "real_vector", "simplex",
           "square", "stack", "symmetric", "unit_interval"]


class Constraint:
    """Base class: `check(value)` is True where `value` satisfies the constraint.

    Attributes:
        is_discrete: whether the constrained space is discrete.
        event_dim: how many rightmost dims together form one event.
    """

    is_discrete = False
    event_dim = 0

    def check(self, value):
        raise NotImplementedError

    def __repr__(self):
        return self.__class__.__name__[1:] + "()"


class _Dependent(Constraint):
    """A placeholder for supports that depend on other variables (cannot be checked)."""

    def __init__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        self._is_discrete = is_discrete
        self._event_dim = event_dim
        super().__init__()

    @property
    def is_discrete(self):
        if self._is_discrete is NotImplemented:
            raise NotImplementedError(".is_discrete cannot be determined statically")
        return self._is_discrete

    @property
    def event_dim(self):
        if self._event_dim is NotImplemented:
            raise NotImplementedError(".event_dim cannot be determined statically")
        return self._event_dim

    def __call__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        """A new dependent constraint with these static attributes."""
        if is_discrete is NotImplemented:
            is_discrete = self._is_discrete
        if event_dim is NotImplemented:
            event_dim = self._event_dim
        return _Dependent(is_discrete=is_discrete, event_dim=event_dim)

    def check(self, x):
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint):
    """Whether `constraint` is a `dependent` placeholder (so validation skips it)."""
    return isinstance(constraint, _Dependent)


class _DependentProperty(property, _Dependent):
    """A property whose class-level value is a dependent constraint (e.g. Uniform.support
    depends on the instance's bounds)."""

    def __init__(self, fn=None, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        property.__init__(self, fn)
        self._is_discrete = is_discrete
        self._event_dim = event_dim

    def __call__(self, fn):
        return _DependentProperty(fn, is_discrete=self._is_discrete,
                                  event_dim=self._event_dim)


class _IndependentConstraint(Constraint):
    """`base_constraint` with its `reinterpreted_batch_ndims` rightmost dims as one event."""

    def __init__(self, base_constraint, reinterpreted_batch_ndims):
        assert isinstance(base_constraint, Constraint)
        assert isinstance(reinterpreted_batch_ndims, int)
        assert reinterpreted_batch_ndims >= 0
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        super().__init__()

    @property
    def is_discrete(self):
        return self.base_constraint.is_discrete

    @property
    def event_dim(self):
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    def check(self, value):
        result = self.base_constraint.check(value)
        if result.dim() < self.reinterpreted_batch_ndims:
            expected = self.base_constraint.event_dim + self.reinterpreted_batch_ndims
            raise ValueError(f"Expected value.dim() >= {expected} but got {value.dim()}")
        result = result.reshape(tuple(result.shape[:result.dim()
                                                   - self.reinterpreted_batch_ndims]) + (-1,))
        return result.all(-1)

    def __repr__(self):
        return (f"{self.__class__.__name__[1:]}({self.base_constraint!r}, "
                f"{self.reinterpreted_batch_ndims})")


class MixtureSameFamilyConstraint(Constraint):
    """The support of a MixtureSameFamily: its components' support, with the mixture dim
    (the rightmost batch dim of the components) reduced away."""

    def __init__(self, base_constraint):
        assert isinstance(base_constraint, Constraint)
        self.base_constraint = base_constraint
        super().__init__()

    @property
    def is_discrete(self):
        return self.base_constraint.is_discrete

    @property
    def event_dim(self):
        return self.base_constraint.event_dim

    def check(self, value):
        unsqueezed = value.unsqueeze(-1 - self.event_dim)
        result = self.base_constraint.check(unsqueezed)
        if value.dim() < self.event_dim:
            raise ValueError(f"Expected value.dim() >= {self.event_dim} but got "
                             f"{value.dim()}")
        num_dim_to_keep = value.dim() - self.event_dim
        result = result.reshape(tuple(result.shape[:num_dim_to_keep]) + (-1,))
        return result.all(-1)

    def __repr__(self):
        return f"{self.__class__.__name__}({self.base_constraint!r})"


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value):
        return (value == 0) | (value == 1)


class _OneHot(Constraint):
    is_discrete = True
    event_dim = 1

    def check(self, value):
        is_boolean = (value == 0) | (value == 1)
        is_normalized = value.sum(-1).eq(1)
        return is_boolean.all(-1) & is_normalized


class _IntegerInterval(Constraint):
    is_discrete = True

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value):
        return ((value % 1 == 0) & (self.lower_bound <= value)
                & (value <= self.upper_bound))

    def __repr__(self):
        return (f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound}, "
                f"upper_bound={self.upper_bound})")


class _IntegerLessThan(Constraint):
    is_discrete = True

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value):
        return (value % 1 == 0) & (value <= self.upper_bound)

    def __repr__(self):
        return f"{self.__class__.__name__[1:]}(upper_bound={self.upper_bound})"


class _IntegerGreaterThan(Constraint):
    is_discrete = True

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound
        super().__init__()

    def check(self, value):
        return (value % 1 == 0) & (value >= self.lower_bound)

    def __repr__(self):
        return f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound})"


class _Real(Constraint):
    def check(self, value):
        return value == value                    # False only for NaN


class _GreaterThan(Constraint):
    def __init__(self, lower_bound):
        self.lower_bound = lower_bound
        super().__init__()

    def check(self, value):
        return self.lower_bound < value

    def __repr__(self):
        return f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound})"


class _GreaterThanEq(Constraint):
    def __init__(self, lower_bound):
        self.lower_bound = lower_bound
        super().__init__()

    def check(self, value):
        return self.lower_bound <= value

    def __repr__(self):
        return f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound})"


class _LessThan(Constraint):
    def __init__(self, upper_bound):
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value):
        return value < self.upper_bound

    def __repr__(self):
        return f"{self.__class__.__name__[1:]}(upper_bound={self.upper_bound})"


class _Interval(Constraint):
    def __init__(self, lower_bound, upper_bound):
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value):
        return (self.lower_bound <= value) & (value <= self.upper_bound)

    def __repr__(self):
        return (f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound}, "
                f"upper_bound={self.upper_bound})")


class _HalfOpenInterval(_Interval):
    def check(self, value):
        return (self.lower_bound <= value) & (value < self.upper_bound)


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value):
        return (value >= 0).all(-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _Multinomial(Constraint):
    """Nonnegative integer counts summing to at most `upper_bound` (not checked to be
    integers, as PyTorch)."""

    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, x):
        return (x >= 0).all(dim=-1) & (x.sum(dim=-1) <= self.upper_bound)


from ._constraints_structured import (_Cat, _CorrCholesky, _LowerCholesky,  # noqa: E402
                                     _LowerTriangular, _PositiveDefinite,
                                     _PositiveSemidefinite, _Square, _Stack, _Symmetric)

dependent = _Dependent()
dependent_property = _DependentProperty
independent = _IndependentConstraint
boolean = _Boolean()
one_hot = _OneHot()
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
integer_interval = _IntegerInterval
real = _Real()
real_vector = independent(real, 1)
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
multinomial = _Multinomial
unit_interval = _Interval(0.0, 1.0)
interval = _Interval
half_open_interval = _HalfOpenInterval
simplex = _Simplex()
lower_triangular = _LowerTriangular()
lower_cholesky = _LowerCholesky()
corr_cholesky = _CorrCholesky()
square = _Square()
symmetric = _Symmetric()
positive_semidefinite = _PositiveSemidefinite()
positive_definite = _PositiveDefinite()
cat = _Cat
stack = _Stack
