"""Classifying names with a character-level RNN: the hand-written RNN cell, then nn.RNN.

The names data set is replaced by a few made-up names per category (nothing can be downloaded).
"""
import random
import string

import nbtorch as torch
import nbtorch.nn as nn

torch.manual_seed(0)
random.seed(0)

all_letters = string.ascii_letters + " .,;'"
n_letters = len(all_letters)

category_lines = {
    "Italianish": ["Rossini", "Bellatti", "Marconi", "Ferretti", "Cavallini", "Moretti", "Bianchi"],
    "Dutchish": ["Van Dijk", "De Vries", "Van Beek", "Bakker", "Visser", "De Boer", "Dekker"],
    "Japaneseish": ["Tanaka", "Sakamoto", "Nakamura", "Yamada", "Kobayashi", "Takahashi", "Kato"],
    "Scottishish": ["MacLeod", "McKenzie", "MacDonald", "McGregor", "Campbell", "MacKay", "Murray"],
}
all_categories = list(category_lines)
n_categories = len(all_categories)


def letterToIndex(letter):
    return all_letters.find(letter)


def lineToTensor(line):
    """A <line_length x 1 x n_letters> tensor of one-hot letter vectors."""
    tensor = torch.zeros(len(line), 1, n_letters)
    for li, letter in enumerate(line):
        tensor[li][0][letterToIndex(letter)] = 1
    return tensor


print(lineToTensor('Jones').size())


class RNN(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super(RNN, self).__init__()

        self.hidden_size = hidden_size

        self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
        self.h2o = nn.Linear(hidden_size, output_size)
        self.softmax = nn.LogSoftmax(dim=1)

    def forward(self, input, hidden):
        combined = torch.cat((input, hidden), 1)
        hidden = torch.tanh(self.i2h(combined))
        output = self.h2o(hidden)
        output = self.softmax(output)
        return output, hidden

    def initHidden(self):
        return torch.zeros(1, self.hidden_size)


n_hidden = 128
rnn = RNN(n_letters, n_hidden, n_categories)

input = lineToTensor('Albert')
hidden = torch.zeros(1, n_hidden)
output, next_hidden = rnn(input[0], hidden)
print(output)


def categoryFromOutput(output):
    top_n, top_i = output.topk(1)
    category_i = top_i[0].item()
    return all_categories[category_i], category_i


print(categoryFromOutput(output))


def randomChoice(l):
    return l[random.randint(0, len(l) - 1)]


def randomTrainingExample():
    category = randomChoice(all_categories)
    line = randomChoice(category_lines[category])
    category_tensor = torch.tensor([all_categories.index(category)], dtype=torch.long)
    line_tensor = lineToTensor(line)
    return category, line, category_tensor, line_tensor


criterion = nn.NLLLoss()
learning_rate = 0.005


def train(category_tensor, line_tensor):
    hidden = rnn.initHidden()

    rnn.zero_grad()

    for i in range(line_tensor.size()[0]):
        output, hidden = rnn(line_tensor[i], hidden)

    loss = criterion(output, category_tensor)
    loss.backward()

    # Add parameters' gradients to their values, multiplied by learning rate
    for p in rnn.parameters():
        p.data.add_(p.grad.data, alpha=-learning_rate)

    return output, loss.item()


n_iters = 200
print_every = 100
current_loss = 0
for iter in range(1, n_iters + 1):
    category, line, category_tensor, line_tensor = randomTrainingExample()
    output, loss = train(category_tensor, line_tensor)
    current_loss += loss
    if iter % print_every == 0:
        guess, guess_i = categoryFromOutput(output)
        correct = '✓' if guess == category else '✗ (%s)' % category
        print('%d %d%% %.4f %s / %s %s' % (iter, iter / n_iters * 100, current_loss / print_every,
                                            line, guess, correct))
        current_loss = 0


def evaluate(line_tensor):
    hidden = rnn.initHidden()
    for i in range(line_tensor.size()[0]):
        output, hidden = rnn(line_tensor[i], hidden)
    return output


confusion = torch.zeros(n_categories, n_categories)
for category in all_categories:
    for line in category_lines[category]:
        output = evaluate(lineToTensor(line))
        guess, guess_i = categoryFromOutput(output)
        confusion[all_categories.index(category)][guess_i] += 1
print(confusion)


# ---- The newer version of the tutorial: nn.RNN over the whole name, an optimizer
class CharRNN(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super(CharRNN, self).__init__()

        self.rnn = nn.RNN(input_size, hidden_size)
        self.h2o = nn.Linear(hidden_size, output_size)
        self.softmax = nn.LogSoftmax(dim=1)

    def forward(self, line_tensor):
        rnn_out, hidden = self.rnn(line_tensor)
        output = self.h2o(hidden[0])
        output = self.softmax(output)

        return output


rnn = CharRNN(n_letters, n_hidden, len(all_categories))
optimizer = torch.optim.SGD(rnn.parameters(), lr=0.15)
criterion = nn.NLLLoss()
examples = [(torch.tensor([all_categories.index(c)]), lineToTensor(line))
            for c in all_categories for line in category_lines[c]]
rnn.train()
for epoch in range(1, 6):
    batches = list(range(len(examples)))
    random.shuffle(batches)
    batches = [batches[i:i + 7] for i in range(0, len(batches), 7)]
    current_loss = 0
    for batch in batches:
        batch_loss = 0
        for i in batch:
            label_tensor, text_tensor = examples[i]
            output = rnn.forward(text_tensor)
            loss = criterion(output, label_tensor)
            batch_loss += loss
        batch_loss.backward()
        nn.utils.clip_grad_norm_(rnn.parameters(), 3)
        optimizer.step()
        optimizer.zero_grad()
        current_loss += batch_loss.item() / len(batch)
    print(epoch, current_loss / len(batches))

rnn.eval()
with torch.no_grad():
    correct = sum(rnn(text).argmax(1).item() == label.item() for label, text in examples)
print(correct, len(examples))
