//! A session on an in-process store. Several sessions on one root are several store
//! instances sharing the folder, which is how several processes would share it; a kill drops
//! the instance between requests (an in-process store cannot be interrupted mid-request).

use serde_json::Value;

use taskproof_core::protocol::Hello;
use taskproof_session::{Session, TargetError};
use taskproof_store::TaskStore;

pub struct InProcessSession {
    store: Option<Box<dyn TaskStore>>,
    hello: Hello,
}

impl InProcessSession {
    pub fn new(store: Box<dyn TaskStore>) -> InProcessSession {
        let hello = store.hello();
        InProcessSession {
            store: Some(store),
            hello,
        }
    }
}

impl Session for InProcessSession {
    fn hello(&self) -> &Hello {
        &self.hello
    }

    fn call(&mut self, request: &Value) -> Result<Value, TargetError> {
        let store = self.store.as_ref().ok_or(TargetError::Killed)?;
        Ok(store.handle_value(request).to_json())
    }

    fn kill(&mut self) {
        self.store = None;
    }

    fn close(&mut self) -> Result<(), TargetError> {
        self.store = None;
        Ok(())
    }

    fn stderr(&self) -> String {
        String::new()
    }
}
