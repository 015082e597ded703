-- Neovim's built-in LSP client driving `aviflowc lsp` (test/lsp/nvim.test):
-- open a file, wait for its diagnostics, hover, jump into the stdlib,
-- complete, apply a fix-it, format. Each result is a line of $OUT, which the
-- test FileChecks; a failed step writes `ERROR ...` and exits 1.
local aviflowc, job, out_path = os.getenv('AVIFLOWC'), os.getenv('JOB'), os.getenv('OUT')
local lines = {}
local function log(text) table.insert(lines, text) end
local timeout = 60000

local bufnr, client_id

local function request(method, params)
  local responses = vim.lsp.buf_request_sync(bufnr, method, params, timeout)
  assert(responses and responses[client_id], 'no answer to ' .. method)
  assert(not responses[client_id].err, method .. ': ' .. vim.inspect(responses[client_id].err))
  return responses[client_id].result
end

-- The 0-based line and column of the first match of `pattern` (plain text).
local function find(pattern, offset)
  for i, line in ipairs(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)) do
    local col = line:find(pattern, 1, true)
    if col then return { line = i - 1, character = col - 1 + (offset or 0) } end
  end
  error('no ' .. pattern .. ' in the buffer')
end

local function at(position)
  return { textDocument = { uri = vim.uri_from_bufnr(bufnr) }, position = position }
end

local function diagnostics()
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    local code = d.user_data and d.user_data.lsp and d.user_data.lsp.code or '?'
    table.insert(out, string.format('%d:%d %s %s', d.lnum + 1, d.col + 1, code, vim.split(d.message, '\n')[1]))
  end
  return out
end

local function wait_for(what, condition)
  assert(vim.wait(timeout, condition, 20), 'timed out waiting for ' .. what)
end

local function hover(label, position)
  local result = request('textDocument/hover', at(position))
  assert(result, 'no hover on ' .. label)
  for _, l in ipairs(vim.split(result.contents.value, '\n')) do log('hover ' .. label .. ': ' .. l) end
end

local function complete(label, position)
  local result = request('textDocument/completion', at(position))
  local labels = {}
  for _, item in ipairs(result.items or result) do table.insert(labels, item.label) end
  log('complete ' .. label .. ': ' .. table.concat(labels, ' '))
end

local function steps()
  vim.cmd('edit ' .. job)
  bufnr = vim.api.nvim_get_current_buf()
  client_id = vim.lsp.start_client({ name = 'aviflowc', cmd = { aviflowc, 'lsp' },
                                     root_dir = vim.fn.fnamemodify(job, ':h') })
  assert(client_id, 'the server did not start')
  vim.lsp.buf_attach_client(bufnr, client_id)
  wait_for('diagnostics', function() return #vim.diagnostic.get(bufnr) > 0 end)
  for _, d in ipairs(diagnostics()) do log('diagnostic ' .. d) end
  local related = vim.diagnostic.get(bufnr)[1].user_data.lsp.relatedInformation or {}
  log('related: ' .. #related)

  hover('field', find('nodes=16'))
  hover('enum', find('tokens_u16', 3))
  hover('reference', find('llama2_7b', 2))

  local target = request('textDocument/definition', at(find('ib_ndr', 1)))
  assert(target, 'no definition of ib_ndr')
  vim.lsp.util.jump_to_location(target, 'utf-16')
  local here = vim.api.nvim_win_get_cursor(0)
  log(string.format('definition: %s line %d: %s', vim.fn.fnamemodify(vim.api.nvim_buf_get_name(0), ':t'), here[1],
                    vim.api.nvim_get_current_line()))
  vim.cmd('buffer ' .. bufnr)

  -- Typing in the buffer: Neovim sends incremental didChange notifications.
  local row = find('network = ib_ndr').line
  vim.api.nvim_buf_set_lines(bufnr, row, row, false, { '  sched' })
  complete('field name', { line = row, character = 7 })
  vim.api.nvim_buf_set_lines(bufnr, row, row + 1, false, { '  scheduler = ' })
  complete('enum value', { line = row, character = 14 })
  vim.api.nvim_buf_set_lines(bufnr, row, row + 1, false, {})
  complete('reference', { line = find('model = llama2_7b').line, character = 10 })

  local fix_at = find('node = hgx_a10', 7)
  local actions = request('textDocument/codeAction', {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    range = { start = fix_at, ['end'] = fix_at },
    context = { diagnostics = {} } })
  assert(actions and #actions > 0, 'no code action at the typo')
  log('code action: ' .. actions[1].title)
  vim.lsp.util.apply_workspace_edit(actions[1].edit, 'utf-16')
  log('after the fix: ' .. vim.api.nvim_buf_get_lines(bufnr, fix_at.line, fix_at.line + 1, false)[1])
  wait_for('the diagnostics to clear', function() return #vim.diagnostic.get(bufnr) == 0 end)
  log('diagnostics after the fix: ' .. #vim.diagnostic.get(bufnr))

  hover('job', find('job pretrain', 5))

  local symbols = request('textDocument/documentSymbol', { textDocument = { uri = vim.uri_from_bufnr(bufnr) } })
  local names = {}
  for _, s in ipairs(symbols) do table.insert(names, s.name .. '(' .. #(s.children or {}) .. ')') end
  log('symbols: ' .. table.concat(names, ' '))

  if vim.lsp.buf.format then vim.lsp.buf.format({ timeout_ms = timeout }) else vim.lsp.buf.formatting_sync(nil, timeout) end
  vim.fn.writefile(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), os.getenv('FORMATTED'))
  log('formatted: ' .. vim.api.nvim_buf_get_lines(bufnr, find('nodes').line, find('nodes').line + 1, false)[1])
end

local ok, err = xpcall(steps, debug.traceback)
if not ok then log('ERROR ' .. tostring(err)) end
vim.fn.writefile(lines, out_path)
if client_id then vim.lsp.stop_client(client_id) end
vim.cmd(ok and 'qall!' or 'cquit! 1')
