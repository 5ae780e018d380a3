-- Wireshark dissector for the testbed's wire header (docs/WIRE.md, version 1).
-- Use: wireshark -X lua_script:collect/wireshark/testbed.lua runs/<id>/pcap/<node>.pcap
-- or copy this file into Wireshark's personal plugins folder. It decodes UDP port 7777 and,
-- heuristically, any UDP datagram that starts with the magic "TB".

local testbed = Proto("testbed", "Testbed agent message")

-- The base header, field by field: name, offset, length in bytes. agents/wire.py's HEADER is the
-- machine-readable layout: tests/test_wire_readers.py checks this table, the ProtoFields and the
-- type, flag and extension tables below against it, and has tshark decode with this file messages
-- that wire.py encoded.
local header = {
    {"magic", 0, 2}, {"version", 2, 1}, {"type", 3, 1}, {"flags", 4, 1}, {"hops", 5, 1},
    {"header_len", 6, 2}, {"origin", 8, 4}, {"sequence", 12, 4}, {"sender", 16, 4},
    {"frag_index", 20, 2}, {"frag_count", 22, 2}, {"message_id", 24, 8},
}
local at = {}  -- name -> {name, offset, length}
local BASE_LEN = 0
for _, h in ipairs(header) do
    at[h[1]] = h
    BASE_LEN = math.max(BASE_LEN, h[2] + h[3])
end

local function field(buffer, name)
    return buffer(at[name][2], at[name][3])
end

local types = {
    [1] = "ACK", [2] = "PROBE",
    [10] = "ABC_REQUEST", [11] = "ABC_REPLY", [12] = "ABC_DATA", [13] = "ABC_TAKE",
    [20] = "GOSSIP_KNOWLEDGE", [21] = "GOSSIP_HEADERS", [22] = "GOSSIP_PULL", [23] = "GOSSIP_GROUPS",
    [30] = "CAUSAL_DATA", [31] = "CAUSAL_RECOVERY", [32] = "MEMBERSHIP",
}
local extension_types = {
    [1] = "VECTOR_CLOCK", [2] = "INFRA_ID", [3] = "TARGET", [4] = "ACKED", [5] = "TIMESTAMP_NS",
}

local f = testbed.fields
f.magic = ProtoField.string("testbed.magic", "Magic")
f.version = ProtoField.uint8("testbed.version", "Version")
f.type = ProtoField.uint8("testbed.type", "Type", base.DEC, types)
f.flags = ProtoField.uint8("testbed.flags", "Flags", base.HEX)
f.flag_ack = ProtoField.bool("testbed.flags.ack_requested", "ACK requested", 8, nil, 0x01)
f.flag_retx = ProtoField.bool("testbed.flags.retransmission", "Retransmission", 8, nil, 0x02)
f.flag_bcast = ProtoField.bool("testbed.flags.broadcast", "Broadcast", 8, nil, 0x04)
f.flag_relayed = ProtoField.bool("testbed.flags.relayed", "Relayed", 8, nil, 0x08)
f.flag_pulled = ProtoField.bool("testbed.flags.pulled", "Pulled", 8, nil, 0x10)
f.hops = ProtoField.uint8("testbed.hops", "Hops")
f.header_len = ProtoField.uint16("testbed.header_len", "Header length")
f.origin = ProtoField.uint32("testbed.origin", "Origin node")
f.sequence = ProtoField.uint32("testbed.sequence", "Sequence")
f.sender = ProtoField.uint32("testbed.sender", "Sender node")
f.frag_index = ProtoField.uint16("testbed.frag_index", "Fragment")
f.frag_count = ProtoField.uint16("testbed.frag_count", "Fragments")
f.message_id = ProtoField.uint64("testbed.message_id", "Message id")
f.ext_type = ProtoField.uint8("testbed.ext.type", "Extension", base.DEC, extension_types)
f.ext_len = ProtoField.uint16("testbed.ext.len", "Length")
f.ext_value = ProtoField.bytes("testbed.ext.value", "Value")
f.payload = ProtoField.bytes("testbed.payload", "Payload")
local flag_bits = {f.flag_ack, f.flag_retx, f.flag_bcast, f.flag_relayed, f.flag_pulled}

local function looks_like_testbed(buffer)
    return buffer:len() >= BASE_LEN and field(buffer, "magic"):string() == "TB"
end

function testbed.dissector(buffer, pinfo, tree)
    if not looks_like_testbed(buffer) then
        return 0
    end
    pinfo.cols.protocol = "TESTBED"
    local header_len = field(buffer, "header_len"):uint()
    local mtype = field(buffer, "type"):uint()
    local subtree = tree:add(testbed, buffer(0, math.min(header_len, buffer:len())), "Testbed message")
    for _, h in ipairs(header) do
        local item = subtree:add(f[h[1]], buffer(h[2], h[3]))
        if h[1] == "flags" then
            for _, bit in ipairs(flag_bits) do
                item:add(bit, buffer(h[2], h[3]))
            end
        end
    end
    local offset = BASE_LEN
    while offset + 3 <= header_len and offset + 3 <= buffer:len() do
        local length = buffer(offset + 1, 2):uint()
        local ext = subtree:add(f.ext_type, buffer(offset, 1))
        ext:add(f.ext_len, buffer(offset + 1, 2))
        if length > 0 and offset + 3 + length <= buffer:len() then
            ext:add(f.ext_value, buffer(offset + 3, length))
        end
        offset = offset + 3 + length
    end
    if buffer:len() > header_len then
        subtree:add(f.payload, buffer(header_len))
    end
    pinfo.cols.info = string.format("%s origin=%d seq=%d frag=%d/%d",
        types[mtype] or tostring(mtype), field(buffer, "origin"):uint(), field(buffer, "sequence"):uint(),
        field(buffer, "frag_index"):uint(), field(buffer, "frag_count"):uint())
    return buffer:len()
end

local function heuristic(buffer, pinfo, tree)
    if not looks_like_testbed(buffer) then
        return false
    end
    testbed.dissector(buffer, pinfo, tree)
    return true
end

DissectorTable.get("udp.port"):add(7777, testbed)
testbed:register_heuristic("udp", heuristic)
