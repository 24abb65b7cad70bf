-- haprx: ingress-nginx's external authentication (nginx.ingress.kubernetes.io/auth-url),
-- with haproxy's own HTTP client. Loaded only when an Ingress uses it.
--
--   http-request set-var-fmt(txn.ngxauthurl) <the auth URL>
--   http-request lua.haprx_nginx_auth <method> <header,header|-> <X-Auth-Request-Redirect|->
--
-- asks the auth service with the client's headers (without its body) and the headers
-- ingress-nginx adds, then sets txn.ngxauth: "200" for any 2xx answer, "401" or "403"
-- as answered, "500" for anything else or no answer within 5 seconds. On a 2xx answer
-- the listed headers are copied from it into the request (a listed header it lacks is
-- removed, so a client cannot supply it). txn.ngxauthwww keeps a 401's WWW-Authenticate
-- and txn.ngxauthcookie the answer's first Set-Cookie.

-- Headers of the client request that describe its own connection or body.
local SKIP = {
  ['host'] = true, ['content-length'] = true, ['transfer-encoding'] = true, ['connection'] = true,
  ['keep-alive'] = true, ['te'] = true, ['upgrade'] = true, ['proxy-connection'] = true,
  ['expect'] = true, ['x-forwarded-proto'] = true,
}

-- haproxy gives header values as a list indexed from 0; take either form.
local function values(list)
  local out = {}
  if type(list) == 'string' then return { list } end
  if type(list) ~= 'table' then return out end
  local i = 0
  while list[i] ~= nil do
    out[#out + 1] = list[i]
    i = i + 1
  end
  if #out == 0 then
    for _, v in ipairs(list) do out[#out + 1] = v end
  end
  return out
end

local function truthy(v)
  return v == true or v == 1
end

core.register_action('haprx_nginx_auth', { 'http-req' }, function(txn, method, names, redirect)
  local url = txn:get_var('txn.ngxauthurl')
  local headers = {}
  for name, list in pairs(txn.http:req_get_headers()) do
    if not SKIP[string.lower(name)] then headers[string.lower(name)] = values(list) end
  end
  local scheme = truthy(txn.f:ssl_fc()) and 'https' or 'http'
  local uri = txn.f:pathq() or '/'
  headers['x-original-url'] = { scheme .. '://' .. (txn.f:req_fhdr('host') or '') .. uri }
  headers['x-original-method'] = { txn.f:method() }
  headers['x-sent-from'] = { 'nginx-ingress-controller' }
  headers['x-real-ip'] = { txn.f:src() }
  headers['x-forwarded-for'] = { txn.f:src() }
  headers['x-auth-request-redirect'] = { redirect ~= '-' and redirect or uri }
  if method ~= 'GET' then
    headers['x-original-uri'] = { uri }
    headers['x-scheme'] = { scheme }
  end
  local client = core.httpclient()
  local send = ({ GET = client.get, HEAD = client.head, POST = client.post, PUT = client.put, DELETE = client.delete })[method] or client.get
  local ok, res = pcall(send, client, { url = url, headers = headers, timeout = 5000 })
  local status = (ok and type(res) == 'table' and tonumber(res.status)) or 0
  local got = {}
  if ok and type(res) == 'table' and type(res.headers) == 'table' then
    for k, v in pairs(res.headers) do got[string.lower(k)] = values(v) end
  end
  if got['set-cookie'] and got['set-cookie'][1] then txn:set_var('txn.ngxauthcookie', got['set-cookie'][1]) end
  if status >= 200 and status < 300 then
    txn:set_var('txn.ngxauth', '200')
    if names ~= '-' then
      for name in string.gmatch(names, '[^,]+') do
        txn.http:req_del_header(name)
        for _, v in ipairs(got[string.lower(name)] or {}) do txn.http:req_add_header(name, v) end
      end
    end
  elseif status == 401 or status == 403 then
    txn:set_var('txn.ngxauth', tostring(status))
    local www = (got['www-authenticate'] or {})[1]
    if status == 401 and www then txn:set_var('txn.ngxauthwww', www) end
  else
    txn:set_var('txn.ngxauth', '500')
  end
end, 3)
