"""A first look at nbtorch: tensors, views, broadcasting and autograd (`make demo`)."""
import time

t0 = time.perf_counter()
import nbtorch as torch  # noqa: E402

print(f"import nbtorch: {time.perf_counter() - t0:.2f} s")
x = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
y = torch.tensor([[5.0, 6.0], [7.0, 8.0]])
print("x + y =", x + y)
print("x * y =", x * y)
print("x.t() is a view:", x.t().data_ptr() == x.data_ptr(), "strides", x.t().stride())

w = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
loss = ((w * 2).exp() - 1).relu().sum()
loss.backward()
print("loss =", loss.item(), " d loss/d w =", w.grad)
print(f"total: {time.perf_counter() - t0:.2f} s")
